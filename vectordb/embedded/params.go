package embedded

import "math"

// HNSW defaults: M links per node (2M on layer 0), the beam width when
// building and when searching. Measured in docs/benchmarks.md.
const (
	DefaultM              = 32
	DefaultEfConstruction = 128
	DefaultEfSearch       = 128
	// maxM bounds M, from Config or a graph file: far above any useful
	// value, and a node's 2M layer-0 slots are allocated for every node.
	maxM = 256
	// maxDims bounds Dimensions: the int8 dot product (dotI8) sums in an
	// int32, exact below 133,000 dimensions.
	maxDims = 100_000
)

func normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	// in float64: 1/|v| of subnormal values is +Inf as a float32
	inv := 1 / math.Sqrt(s)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}
