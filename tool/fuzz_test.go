package tool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
)

// FuzzExecuteArguments feeds arbitrary model-produced argument text through
// validation and decoding: it must never panic, and anything rejected must be
// reported as invalid arguments.
func FuzzExecuteArguments(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `"x"`, `{"location":{"city":"Paris"},"days":3}`,
		`{"location":{"city":"P"},"days":1e400}`, `{"location":{"city":"P"},"days":-0}`,
		`{"location":{"city":"\ud800"},"days":1,"unit":"celsius","fields":["rain"],"stops":[{"city":"x"}]}`,
		`{"location":{"city":"P"},"days":3}}`, `{"a":`, "\xff",
	} {
		f.Add(seed)
	}
	s, err := tool.NewSet([]tool.Tool{forecastTool(f)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args string) {
		res := s.Execute(context.Background(), model.ToolCall{ID: "c", Name: "forecast", Arguments: args})
		if res.Err != nil && !errors.Is(res.Err, tool.ErrInvalidArguments) {
			t.Fatalf("args %q: unexpected error kind: %v", args, res.Err)
		}
		if res.Err == nil && res.Content == "" {
			t.Fatalf("args %q: success without content", args)
		}
	})
}
