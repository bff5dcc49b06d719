package embedded

import "math"

// HNSW defaults: M links per node (2M on layer 0), the beam width when
// building and when searching. Measured in docs/benchmarks.md.
const (
	DefaultM              = 32
	DefaultEfConstruction = 128
	DefaultEfSearch       = 128
)

func normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(s))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}
