package embedded

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/vectordb"
)

// A vector of tiny (subnormal) values is a direction like any other: it
// was scaled by 1/|v| computed in float32, which is +Inf for them, so it
// became Inf and NaN (0 × Inf), and its row or query scored NaN.
func TestSearch_TinyVectorsNormalize(t *testing.T) {
	t.Parallel()
	s := openAt(t, filepath.Join(t.TempDir(), "v.db"))
	defer s.Close()
	tiny := func(v []float32) []float32 {
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = x * 1e-44
		}
		return out
	}
	var rows []vectordb.Row
	for i := range 20 {
		rows = append(rows, vectordb.Row{ID: fmt.Sprint(i), ContentID: "c", Content: "t", Vector: vec(i)})
	}
	rows = append(rows, vectordb.Row{ID: "tiny", ContentID: "c", Content: "t", Vector: tiny(vec(100))})
	if err := s.Upsert(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q    []float32
		want string
	}{{tiny(vec(5)), "5"}, {vec(100), "tiny"}} {
		h, err := s.Search(context.Background(), vectordb.Query{Mode: vectordb.Vector, Vector: c.q, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(h) == 0 || h[0].ID != c.want || math.IsNaN(h[0].Score) {
			t.Fatalf("nearest to %s: %v", c.want, h)
		}
	}
}
