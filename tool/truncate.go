package tool

import "unicode/utf8"

// Truncate cuts s to at most limit bytes without splitting a UTF-8 sequence
// and reports whether anything was cut. A limit <= 0 means no limit. Toolkits
// use it to cap what they return: a model's context is the scarce resource.
func Truncate(s string, limit int) (string, bool) {
	if limit <= 0 || len(s) <= limit {
		return s, false
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}
