package embedded

import "math"

// Distances. The graph walk compares int8 codes of the vectors (a quarter
// of the memory traffic of float32, which is what a walk over a graph much
// larger than the cache pays for); the results it keeps are then re-scored
// with the float32 vectors (index.rerank). Go has no SIMD intrinsics, so
// the kernels are unrolled loops with independent accumulators, which the
// CPU can overlap; docs/benchmarks.md has the measurements.

// dot is the float32 dot product, 8-way unrolled.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	for len(a) >= 8 {
		a8, b8 := a[:8:8], b[:8:8]
		s0 += a8[0]*b8[0] + a8[4]*b8[4]
		s1 += a8[1]*b8[1] + a8[5]*b8[5]
		s2 += a8[2]*b8[2] + a8[6]*b8[6]
		s3 += a8[3]*b8[3] + a8[7]*b8[7]
		a, b = a[8:], b[8:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// dotI8 is the dot product of two int8 codes. The sum cannot overflow:
// |Σ| ≤ 127² × dims, below 2³¹ for any dims under 133,000.
func dotI8(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	for len(a) >= 8 {
		a8, b8 := a[:8:8], b[:8:8]
		s0 += int32(a8[0])*int32(b8[0]) + int32(a8[4])*int32(b8[4])
		s1 += int32(a8[1])*int32(b8[1]) + int32(a8[5])*int32(b8[5])
		s2 += int32(a8[2])*int32(b8[2]) + int32(a8[6])*int32(b8[6])
		s3 += int32(a8[3])*int32(b8[3]) + int32(a8[7])*int32(b8[7])
		a, b = a[8:], b[8:]
	}
	for i := range a {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}

// quantize writes v's int8 code to dst (len(v)) and returns its scale:
// v[i] ≈ scale × dst[i], with the largest |v[i]| mapped to 127 (a scale
// per vector, so a vector with one dominant component keeps it). A zero or
// non-finite vector gets the zero code.
func quantize(v []float32, dst []int8) float32 {
	var mx float32
	for _, x := range v {
		if x < 0 {
			x = -x
		}
		if x > mx {
			mx = x
		}
	}
	if mx == 0 || math.IsInf(float64(mx), 0) || mx != mx {
		clear(dst)
		return 0
	}
	inv := 127 / mx
	for i, x := range v {
		r := x * inv
		if r != r { // NaN component
			r = 0
		}
		if r >= 0 {
			dst[i] = int8(min(r+0.5, 127))
		} else {
			dst[i] = int8(max(r-0.5, -127))
		}
	}
	return mx / 127
}

// touch reads one byte of every cache line of each of the nodes' codes
// before their distances are computed: the loads are independent, so the
// CPU overlaps their misses instead of taking them one distance at a time
// (Go has no prefetch instruction). The sum is kept so the loads are not
// dropped.
func (x *index) touch(ids []int32) int8 {
	var t int8
	d := x.dims
	for _, n := range ids {
		c := x.codes[int(n)*d : (int(n)+1)*d]
		for o := 0; o < len(c); o += 64 {
			t += c[o]
		}
		t += c[len(c)-1]
	}
	return t
}
