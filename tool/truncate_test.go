package tool

import (
	"testing"
	"unicode/utf8"
)

func TestTruncate_CutsAtARuneBoundary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		limit int
		want  string
		cut   bool
	}{
		{"hello", 0, "hello", false},
		{"hello", 5, "hello", false},
		{"hello", 3, "hel", true},
		{"héllo", 2, "h", true}, // é is two bytes: not split
		{"日本語", 4, "日", true},
	}
	for _, tc := range tests {
		got, cut := Truncate(tc.in, tc.limit)
		if got != tc.want || cut != tc.cut || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q, %v; want %q, %v", tc.in, tc.limit, got, cut, tc.want, tc.cut)
		}
	}
}
