package agent

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// The cost of the controls on the paths every run takes: a tool call through
// zero or two hooks, a cached tool result, and a run through a pre- and a
// post-hook compared with the same run without hooks.

func benchToolHandler(b *testing.B, cfg Config) {
	cfg.Model = scripted.Reply("x")
	cfg.Tools = []tool.Tool{weatherTool()}
	a, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	h := a.prep().exec
	call := model.ToolCall{ID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := h(ctx, call); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

func passThrough(next ToolHandler) ToolHandler {
	return func(ctx context.Context, call model.ToolCall) tool.Result { return next(ctx, call) }
}

func BenchmarkToolCall_NoHooks(b *testing.B) { benchToolHandler(b, Config{}) }

func BenchmarkToolCall_TwoHooks(b *testing.B) {
	benchToolHandler(b, Config{ToolHooks: []ToolHook{passThrough, passThrough}})
}

func BenchmarkToolCall_CacheHit(b *testing.B) { benchToolHandler(b, Config{CacheResults: true}) }

func benchRun(b *testing.B, cfg Config) {
	cfg.Model = scripted.Reply("It is sunny in Paris.")
	a, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Run(ctx, run.TextInput("Weather in Paris?")); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRun_NoHooks(b *testing.B) { benchRun(b, Config{}) }

func BenchmarkRun_PreAndPostHook(b *testing.B) {
	benchRun(b, Config{
		PreHooks:  []PreHook{PreHookFunc("pre", func(context.Context, *run.Input) error { return nil })},
		PostHooks: []PostHook{PostHookFunc("post", func(context.Context, *run.Output) error { return nil })},
	})
}
