package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// BenchmarkRunMemory measures what update_memory_on_run and session
// summaries add to a persisted single-turn run: the memory model is an
// instant scripted model, so the numbers are Agentry's own overhead (the
// manager's read of the user's memories, the request, the parse, the
// one-transaction apply, and the MemoryUpdateCompleted listing when
// streaming). Runs rotate over 100 users, one session each run.
func BenchmarkRunMemory(b *testing.B) {
	cases := []struct {
		name string
		mc   MemoryConfig
	}{
		{"baseline", MemoryConfig{}},
		{"update_noop", MemoryConfig{UpdateMemoryOnRun: true, AddMemoriesToContext: new(bool),
			MemoryModel: scripted.Reply(`{"updates":[]}`)}},
		{"update_add", MemoryConfig{UpdateMemoryOnRun: true, AddMemoriesToContext: new(bool),
			MemoryModel: scripted.Reply(`{"updates":[{"op":"add","memory_id":"","memory":"likes tea","topics":["drinks"]}]}`)}},
		{"update_add_in_context", MemoryConfig{UpdateMemoryOnRun: true,
			MemoryModel: scripted.Reply(`{"updates":[{"op":"add","memory_id":"","memory":"likes tea","topics":["drinks"]}]}`)}},
		{"session_summary", MemoryConfig{EnableSessionSummaries: true, AddSessionSummaryToContext: new(bool),
			SessionSummaryModel: scripted.Reply(`{"summary":"The user asked about the weather.","topics":["weather"]}`)}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			store, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			a := mustAgent(b, Config{ID: "bench", Model: scripted.Reply("It is sunny."), DB: store, MemoryConfig: c.mc})
			ctx := context.Background()
			in := run.TextInput("I like tea. What is the weather like?")
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				i++
				if _, err := a.Run(ctx, in, WithUserID(fmt.Sprint("u", i%100))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
