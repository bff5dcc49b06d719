package mcptool

import (
	"crypto/sha256"
	"encoding/hex"
)

// maxModelName is the longest function name every model provider accepts
// (^[A-Za-z0-9_-]{1,64}$). MCP allows 128 characters and '.', so a
// server's name can be one a provider refuses for the whole request.
const maxModelName = 64

// providerSafe reports whether name is made of letters, digits, '_' and '-'.
func providerSafe(name string) bool {
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// modelNames gives the server's tools (of distinct names) the names the
// model sees: prefix+name when providers accept it; otherwise each other
// character becomes '_' and a name too long, or one that would then equal
// another tool's, is cut and ends with a hash of the server's name (as does
// the empty name), so every tool keeps a distinct, non-empty name.
func modelNames(prefix string, server []string) []string {
	out := make([]string, len(server))
	taken := map[string]bool{}
	var changed []int
	for i, n := range server {
		if full := prefix + n; n != "" && providerSafe(full) && len(full) <= maxModelName && !taken[full] {
			out[i] = full
			taken[full] = true
			continue
		}
		changed = append(changed, i)
	}
	for _, i := range changed {
		name := prefix + unsafeName.ReplaceAllString(server[i], "_")
		if server[i] == "" || len(name) > maxModelName || taken[name] {
			name = hashed(name, server[i])
		}
		out[i] = name
		taken[name] = true
	}
	return out
}

// fitName cuts a name of the toolkit's own (the resource tool's) to the
// providers' length, keeping it distinct by a hash of the whole.
func fitName(name string) string {
	if len(name) <= maxModelName {
		return name
	}
	return hashed(name, name)
}

// hashed is name cut to leave room for "_" and 8 hex digits of the hash of
// key.
func hashed(name, key string) string {
	sum := sha256.Sum256([]byte(key))
	const suffix = 1 + 8
	if len(name) > maxModelName-suffix {
		name = name[:maxModelName-suffix]
	}
	return name + "_" + hex.EncodeToString(sum[:4])
}
