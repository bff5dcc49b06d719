//go:build !race

// The race detector changes what escapes and makes sync.Pool drop items, so
// allocation counts under -race are not the product's: these tests build
// without it (.ci/run runs them so).

package db

import (
	"encoding/json"
	"testing"
)

// TestSessionStateOf_NoStateAllocatesNothing: every turn of a session reads
// its state, and a session without one (its data holding the metrics only)
// must not pay for decoding the rest (it did: encoding/json, five
// allocations, an eighth of an in-memory turn's CPU).
func TestSessionStateOf_NoStateAllocatesNothing(t *testing.T) {
	data := json.RawMessage(`{"session_metrics":{"input_tokens":12,"details":{"model":[{"id":"m","provider":"p","input_tokens":12}]}}}`)
	if n := testing.AllocsPerRun(100, func() {
		if s, ok := SessionStateOf(data); s != nil || !ok {
			t.Fatal(s, ok)
		}
	}); n != 0 {
		t.Fatalf("reading no state allocates %v times", n)
	}
}
