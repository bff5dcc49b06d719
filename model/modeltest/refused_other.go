//go:build !unix

package modeltest

import "testing"

// boundNotListening: not done here; RefusedAddr closes a listener instead.
func boundNotListening(testing.TB) (string, bool) { return "", false }
