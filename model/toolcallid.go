package model

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// SafeToolCallID returns id as providers that refuse other tool call ids
// take it ([a-zA-Z0-9_-], Anthropic's and Bedrock's rule): another
// provider's ids in a history (Kimi K2's "functions.get_weather:0", after a
// fallback) have their other characters replaced by '_'. With limit > 0, an
// id longer than limit is cut and ends in a hash of the whole id, so two ids
// that share a prefix stay apart. A call and its result map alike, so the
// pair still matches.
func SafeToolCallID(id string, limit int) string {
	valid := func(c rune) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	out := id
	if strings.IndexFunc(id, func(c rune) bool { return !valid(c) }) >= 0 {
		out = strings.Map(func(c rune) rune {
			if valid(c) {
				return c
			}
			return '_'
		}, id)
	}
	if limit > 0 && len(out) > limit {
		sum := sha256.Sum256([]byte(id))
		suffix := "_" + hex.EncodeToString(sum[:8])
		out = out[:limit-len(suffix)] + suffix
	}
	return out
}
