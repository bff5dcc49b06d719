package clip

import "unicode/utf8"

// Bytes returns the longest prefix of s of at most n bytes that ends on a
// rune boundary, and whether s was cut. n < 0 is 0.
func Bytes(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// Mark is Bytes with mark appended when s was cut.
func Mark(s string, n int, mark string) string {
	if c, cut := Bytes(s, n); cut {
		return c + mark
	}
	return s
}
