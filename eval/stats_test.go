package eval

import (
	"math"
	"testing"
)

// The summary numbers are Agno's (Python's statistics module): sample
// standard deviation (0 for one value), median, and p95 as
// statistics.quantiles(n=100, method="inclusive")[94] (the value itself
// for one). The wanted numbers were computed with CPython 3.
func TestSummarize_AsAgno(t *testing.T) {
	t.Parallel()
	fifty := make([]float64, 50)
	for i := range fifty {
		fifty[i] = float64(50 - i)
	}
	for _, c := range []struct {
		in                           []float64
		avg, min, max, std, med, p95 float64
	}{
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4, 1.2909944487358056, 2.5, 3.85},
		{[]float64{1}, 1, 1, 1, 0, 1, 1},
		{[]float64{1, 2}, 1.5, 1, 2, 0.7071067811865476, 1.5, 1.95},
		{[]float64{9, 5}, 7, 5, 9, 2.8284271247461903, 7, 8.8},
		{[]float64{0.1, 0.5, 0.2, 0.9, 0.3, 0.7, 0.4}, 0.44285714285714284, 0.1, 0.9, 0.2819996622760558, 0.4, 0.84},
		{fifty, 25.5, 1, 50, 14.577379737113251, 25.5, 47.55},
	} {
		got := summarize(c.in)
		for _, f := range []struct {
			name      string
			got, want float64
		}{{"avg", got.avg, c.avg}, {"min", got.min, c.min}, {"max", got.max, c.max}, {"std", got.std, c.std},
			{"median", got.median, c.med}, {"p95", got.p95, c.p95}} {
			if math.Abs(f.got-f.want) > 1e-12*math.Max(1, math.Abs(f.want)) {
				t.Errorf("%v: %s = %v, want %v (Agno's)", c.in, f.name, f.got, f.want)
			}
		}
	}
	if got := summarize(nil); got != (stats{}) {
		t.Errorf("empty sample: %+v", got)
	}
}
