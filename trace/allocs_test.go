//go:build !race

// The race detector changes what escapes and makes sync.Pool drop items, so
// allocation counts under -race are not the product's: these tests build
// without it.

package trace_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/trace"
)

// TestTracingOff_AddsNoAllocations: with tracing off, a run through
// Instrument and KnownRunner (and ToolHook, Model, Runner) allocates exactly
// what the bare agent does: a single-turn run and a run that calls a tool,
// by Run and by Stream.
func TestTracingOff_AddsNoAllocations(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		cfg  func(testing.TB) agent.Config
	}{
		{"single turn", func(testing.TB) agent.Config { return agent.Config{ID: "bench", Model: scripted.Reply("hello")} }},
		{"tool call", calcConfig},
	} {
		bare, err := agent.New(tt.cfg(t))
		if err != nil {
			t.Fatal(err)
		}
		cfg := tt.cfg(t)
		trace.Instrument(&cfg, nil)
		cfg.Model = trace.Model(cfg.Model, nil)
		cfg.ToolHooks = append(cfg.ToolHooks, trace.ToolHook(nil))
		a, err := agent.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		off := trace.Runner(trace.KnownRunner(a, nil, trace.RunInfo{RunID: "r"}), nil)
		// A scripted model starts its turns over on each new user message,
		// so every run is the same conversation.
		runs := func(r agent.Runner) float64 {
			return testing.AllocsPerRun(100, func() {
				if _, err := r.Run(ctx, run.TextInput("hi")); err != nil {
					t.Fatal(err)
				}
			})
		}
		streams := func(r agent.Runner) float64 {
			return testing.AllocsPerRun(100, func() {
				for _, err := range r.Stream(ctx, run.TextInput("hi")) {
					if err != nil {
						t.Fatal(err)
					}
				}
			})
		}
		if b, o := runs(bare), runs(off); o > b {
			t.Errorf("%s, Run: tracing off allocates %v per run, the bare agent %v", tt.name, o, b)
		}
		if b, o := streams(bare), streams(off); o > b {
			t.Errorf("%s, Stream: tracing off allocates %v per run, the bare agent %v", tt.name, o, b)
		}
	}
}
