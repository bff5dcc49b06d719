package sqlstore

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestLooseInt64_ReadsNumbersRefusesTheRest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		src   any
		want  int64
		valid bool
		err   bool
	}{
		{nil, 0, false, false},
		{int64(1733000000), 1733000000, true, false},
		{int64(-5), -5, true, false},
		{1733000000.9, 1733000000, true, false}, // truncated, not rounded
		{-0.5, 0, true, false},
		{float64(math.MinInt64), math.MinInt64, true, false},
		{math.Pow(2, 63), 0, false, true},
		{math.NaN(), 0, false, true},
		{math.Inf(1), 0, false, true},
		{[]byte("1733000000"), 1733000000, true, false},
		{" 1733000000.5 ", 1733000000, true, false},
		{"1.7e9", 1700000000, true, false},
		{"yesterday", 0, false, true},
		{"NaN", 0, false, true},
		{"0x10", 0, false, true},
		{"", 0, false, true},
		{uint64(math.MaxUint64), 0, false, true},
		{time.Unix(1733000000, 5).UTC(), 1733000000, true, false},
		{true, 0, false, true},
	}
	for _, c := range cases {
		got, valid, err := looseInt64(c.src)
		if (err != nil) != c.err || got != c.want || valid != c.valid {
			t.Errorf("looseInt64(%#v) = %d, %v, %v; want %d, %v, error %v", c.src, got, valid, err, c.want, c.valid, c.err)
		}
		if err != nil && !errors.Is(err, errNotInteger) {
			t.Errorf("looseInt64(%#v) error %v is not errNotInteger", c.src, err)
		}
	}
}

func FuzzLooseInt64Text(f *testing.F) {
	for _, s := range []string{"1733000000", "1733000000.5", "-1e300", "9223372036854775807", "9.3e18", "", "abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, valid, err := looseInt64(s)
		if err == nil && !valid {
			t.Fatalf("%q: no error and not valid", s)
		}
		if err != nil && (v != 0 || valid) {
			t.Fatalf("%q: error %v with %d, %v", s, err, v, valid)
		}
	})
}
