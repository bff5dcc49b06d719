package scripted

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
)

// FuzzParse checks that any script either fails to load with an error or
// yields a model that streams without panicking.
func FuzzParse(f *testing.F) {
	f.Add([]byte("turns:\n  - content: hi\n"), false)
	f.Add([]byte(`{"turns":[{"tool_calls":[{"name":"x","raw_args":"{"}]}]}`), true)
	f.Add([]byte("on_exhausted: error\nturns:\n  - match: a\n    error: boom\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		m, err := Parse(data, isJSON)
		if err != nil {
			return
		}
		// A script may ask for long latencies; the deadline keeps the fuzzer moving.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "a")}}
		for range m.Stream(ctx, req) {
		}
	})
}
