package clip

import (
	"testing"
	"unicode/utf8"
)

func TestBytes(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
		cut  bool
	}{
		{"hello", 10, "hello", false},
		{"hello", 5, "hello", false},
		{"hello", 3, "hel", true},
		{"hello", 0, "", true},
		{"hello", -1, "", true},
		{"", 0, "", false},
		{"aé", 2, "a", true},   // é is two bytes: not split
		{"aé", 3, "aé", false}, //
		{"日本語", 4, "日", true},
		{"日本語", 6, "日本", true},
		{"\xff\xfe", 1, "\xff", true},                               // invalid bytes are each a boundary
		{"a\x80\x80\x80\x80\x80\x80", 5, "a\x80\x80\x80\x80", true}, // stray continuation bytes too
		{"\x80\x80\x80\x80\x80\x80", 4, "\x80\x80\x80\x80", true},   // (binary output is not cut to nothing)
		{"ab\xe6\x97", 3, "ab\xe6", true},                           // a rune's start without its end
		{"a\xf0\x9f\x98\x80b", 4, "a", true},                        // a four-byte rune
		{"\x80\xf0\x9f\x98\x80", 3, "\x80", true},                   //
		{"\xef\xbf\xbdx", 2, "", true},                              // U+FFFD is a rune like any other
	}
	for _, tc := range tests {
		got, cut := Bytes(tc.s, tc.n)
		if got != tc.want || cut != tc.cut {
			t.Errorf("Bytes(%q, %d) = %q, %v; want %q, %v", tc.s, tc.n, got, cut, tc.want, tc.cut)
		}
	}
	if got := Mark("日本語", 4, "…"); got != "日…" {
		t.Errorf("Mark = %q", got)
	}
	if got := Mark("日本", 6, "…"); got != "日本" {
		t.Errorf("Mark of a short string = %q", got)
	}
}

func TestDropPartial(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"aé", "aé"},
		{"a\xc3", "a"},         // é's first byte
		{"ab\xe6\x97", "ab"},   // 日's first two
		{"a\xf0\x9f\x98", "a"}, // a four-byte rune's first three
		{"a\xf0\x9f\x98\x80", "a\xf0\x9f\x98\x80"},
		{"a\x80", "a\x80"},               // a stray continuation byte is kept
		{"a\xff", "a\xff"},               // so is a byte that starts nothing
		{"\xe6\x97\x41", "\xe6\x97\x41"}, // not a cut rune: invalid, kept
	}
	for _, tc := range tests {
		if got := string(DropPartial([]byte(tc.in))); got != tc.want {
			t.Errorf("DropPartial(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzBytes(f *testing.F) {
	f.Add("日本語 text", 4)
	f.Add("a\x80\x80\x80\x80\x80\x80", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got, cut := Bytes(s, n)
		if len(got) > max(n, 0) && cut || len(got) > len(s) || s[:len(got)] != got {
			t.Fatalf("Bytes(%q, %d) = %q", s, n, got)
		}
		if cut != (len(s) > n) {
			t.Fatalf("cut %v for len %d, n %d", cut, len(s), n)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("split a rune: %q", got)
		}
		if cut && len(got) < n-(utf8.UTFMax-1) {
			t.Fatalf("Bytes(%q, %d) = %q: cut more than a rune", s, n, got)
		}
	})
}
