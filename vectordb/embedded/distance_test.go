package embedded

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkDistance compares the float32 and int8 kernels for 384-dim
// vectors: "hot" re-reads 16 vectors (cache-resident: arithmetic only),
// "random" gathers 64 nodes at a time from 100k like one expansion of a
// layer-0 search, with and without touch (overlapped misses first).
func BenchmarkDistance(b *testing.B) {
	const n, dims = 100_000, 384
	r := rand.New(rand.NewPCG(1, 2))
	vecs := make([]float32, n*dims)
	for i := range vecs {
		vecs[i] = float32(r.NormFloat64())
	}
	x := &index{dims: dims, vecs: vecs, codes: make([]int8, n*dims), scales: make([]float32, n)}
	for i := range n {
		x.scales[i] = quantize(x.vec(int32(i)), x.code(int32(i)))
	}
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(r.IntN(n))
	}
	q, qc := x.vec(0), x.code(0)
	var sink float32
	b.Run("float32/hot", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			sink += dot(q, x.vec(int32(i%16)))
		}
	})
	b.Run("int8/hot", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			sink += float32(dotI8(qc, x.code(int32(i%16))))
		}
	})
	gather := func(b *testing.B, touch bool, f func(int32) float32) {
		for i := 0; b.Loop(); i += 64 {
			ids := perm[i%(n-64) : i%(n-64)+64]
			if touch {
				sink += float32(x.touch(ids))
			}
			for _, id := range ids {
				sink += f(id)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(64*b.N), "ns/distance")
	}
	b.Run("float32/random64", func(b *testing.B) {
		gather(b, false, func(id int32) float32 { return dot(q, x.vec(id)) })
	})
	b.Run("int8/random64", func(b *testing.B) {
		gather(b, false, func(id int32) float32 { return float32(dotI8(qc, x.code(id))) })
	})
	b.Run("int8/random64-touched", func(b *testing.B) {
		gather(b, true, func(id int32) float32 { return float32(dotI8(qc, x.code(id))) })
	})
	_ = sink
}
