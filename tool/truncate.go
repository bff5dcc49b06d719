package tool

import "github.com/agentryhq/agentry/internal/clip"

// Truncate cuts s to at most limit bytes without splitting a UTF-8 sequence
// and reports whether anything was cut. A limit <= 0 means no limit. Toolkits
// use it to cap what they return: a model's context is the scarce resource.
func Truncate(s string, limit int) (string, bool) {
	if limit <= 0 {
		return s, false
	}
	return clip.Bytes(s, limit)
}
