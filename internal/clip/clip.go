package clip

import "unicode/utf8"

// Bytes returns the longest prefix of s of at most n bytes that does not
// split a rune, and whether s was cut. n < 0 is 0. Bytes that are not UTF-8
// are each a rune of their own: only a valid multi-byte rune that n would
// split is left out whole.
func Bytes(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	n = max(n, 0)
	// The rune s[n] may belong to starts at most UTFMax-1 bytes before it.
	for p := n - 1; p >= 0 && p > n-utf8.UTFMax; p-- {
		if !utf8.RuneStart(s[p]) {
			continue
		}
		if r, size := utf8.DecodeRuneInString(s[p:]); (r != utf8.RuneError || size > 1) && p+size > n {
			return s[:p], true
		}
		break
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

// DropPartial returns b without the first bytes of a multi-byte UTF-8 rune
// it ends with: b was cut inside that rune, and its start alone would read
// as U+FFFD. Other bytes are kept, as Bytes keeps them.
func DropPartial(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
