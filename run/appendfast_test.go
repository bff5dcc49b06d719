package run

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// plainByte is appendString's per-byte rule: the byte goes out as is.
func plainByte(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' }

func word(bs [8]byte) uint64 {
	var w uint64
	for i, c := range bs {
		w |= uint64(c) << (8 * i)
	}
	return w
}

// plainWord says of a word exactly what plainByte says of its eight bytes:
// every byte value at every position in an otherwise plain word, then
// random words.
func TestPlainWord_AgreesWithTheByteRule(t *testing.T) {
	for pos := range 8 {
		for c := range 256 {
			bs := [8]byte{'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}
			bs[pos] = byte(c)
			if got, want := plainWord(word(bs)), plainByte(byte(c)); got != want {
				t.Fatalf("byte %#x at %d: plainWord %v, want %v", c, pos, got, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var bs [8]byte
		want := true
		for i := range bs {
			// Mostly plain bytes, so that both answers are common.
			bs[i] = byte(0x20 + r.IntN(0x60))
			if r.IntN(16) == 0 {
				bs[i] = byte(r.IntN(256))
			}
			want = want && plainByte(bs[i])
		}
		if got := plainWord(word(bs)); got != want {
			t.Fatalf("%q: plainWord %v, want %v", bs[:], got, want)
		}
	}
}

// appendNanos writes what strconv's shortest 'f' form writes, and declines
// what it cannot say exactly.
func TestAppendNanos_SameAsShortestFloat(t *testing.T) {
	check := func(f float64) {
		t.Helper()
		got, ok := appendNanos(nil, f)
		if !ok {
			return
		}
		if want := strconv.FormatFloat(f, 'f', -1, 64); string(got) != want {
			t.Fatalf("%v: appendNanos %q, strconv %q", f, got, want)
		}
	}
	taken := 0
	r := rand.New(rand.NewPCG(3, 4))
	for range 300000 {
		// Durations as run metrics hold them, in both conversions.
		d := time.Duration(r.Int64N(int64(1e15)))
		if r.IntN(2) == 0 {
			d = time.Duration(r.Int64N(int64(10 * time.Second)))
		}
		for _, f := range []float64{d.Seconds(), float64(d) / 1e9} {
			if _, ok := appendNanos(nil, f); ok {
				taken++
			}
			check(f)
		}
	}
	if taken < 300000 {
		t.Errorf("only %d of 600000 durations took the fast path", taken)
	}
	for _, f := range []float64{1e-6, 0.000507588, 0.5, 1, 1.5, 59.999999999, 999999.999999999, 999999.999999, 123456.000001} {
		if _, ok := appendNanos(nil, f); !ok {
			t.Errorf("%v: not taken", f)
		}
		check(f)
	}
	// Not whole nanoseconds, or out of range: declined.
	for _, f := range []float64{0.1234567891, 1.0 / 3, math.Pi, 1e6, 1e7, 9.99e-7, 0, -1.5, math.Inf(1), math.NaN(), math.MaxFloat64} {
		if b, ok := appendNanos(nil, f); ok {
			if want := strconv.FormatFloat(f, 'f', -1, 64); string(b) != want {
				t.Errorf("%v: took %q, want %q or declined", f, b, want)
			}
		}
	}
	for range 200000 {
		f := r.Float64() * math.Pow(10, float64(r.IntN(12)-6))
		check(f)
	}
}
