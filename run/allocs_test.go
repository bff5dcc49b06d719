//go:build !race

// The race detector changes what escapes and makes sync.Pool drop items, so
// allocation counts under -race are not the product's: these tests build
// without it (.ci/run runs them so).

package run

import (
	"encoding/json"
	"testing"
)

// TestAddSessionMetrics_AllocationsOnThePlainPath: a turn's update of its
// session's metrics (one model listed) was 28 allocations by reflection; 8 now.
func TestAddSessionMetrics_AllocationsOnThePlainPath(t *testing.T) {
	stored := json.RawMessage(`{"input_tokens":120,"output_tokens":30,"total_tokens":150,"details":{"model":[{"id":"gpt-4o","provider":"OpenAI","input_tokens":120,"output_tokens":30,"total_tokens":150}]}}`)
	var add SessionMetrics
	add.AddRun(&Metrics{Usage: tokens(10, 3), Details: map[string][]ModelMetrics{"model": {{ID: "gpt-4o", Provider: "OpenAI", Usage: tokens(10, 3)}}}})
	var out json.RawMessage
	n := testing.AllocsPerRun(100, func() {
		var err error
		if out, err = AddSessionMetrics(stored, &add); err != nil {
			t.Fatal(err)
		}
	})
	want := `{"input_tokens":130,"output_tokens":33,"total_tokens":163,"details":{"model":[{"id":"gpt-4o","provider":"OpenAI","input_tokens":130,"output_tokens":33,"total_tokens":163}]}}`
	if string(out) != want {
		t.Fatalf("got %s", out)
	}
	if n > 8 {
		t.Fatalf("%v allocations", n)
	}
}
