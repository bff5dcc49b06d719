package dbtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// BenchJournalStep measures the step journal's overhead per step on d: a
// recorded step (record: BeginStep and FinishStep, two fenced transactions,
// around a step that does nothing; ~1 KB result) and a replayed one (replay:
// the recorded result read back by a resumed attempt).
func BenchJournalStep(b *testing.B, d *db.DB) {
	j, err := db.NewJournal(d)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	result, _ := json.Marshal(map[string]string{"content": strings.Repeat("tool output ", 85)})
	fn := func(context.Context) (json.RawMessage, error) { return result, nil }
	const perRun = 20 // steps per run, as a run with 10 tool turns
	b.Run("record", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s := run.JournalStep{RunID: fmt.Sprintf("bench-%d", i/perRun), Key: fmt.Sprintf("tool:call-%d", i%perRun), Kind: "tool", Attempt: 1,
				Idempotent: true, Request: json.RawMessage(`{"q":"x"}`)}
			if _, err := j.Do(ctx, s, fn); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("replay", func(b *testing.B) {
		b.ReportAllocs()
		for k := range perRun {
			s := run.JournalStep{RunID: "bench-replay", Key: fmt.Sprintf("tool:call-%d", k), Kind: "tool", Attempt: 1, Idempotent: true}
			if _, err := j.Do(ctx, s, fn); err != nil {
				b.Fatal(err)
			}
		}
		i := 0
		for b.Loop() {
			s := run.JournalStep{RunID: "bench-replay", Key: fmt.Sprintf("tool:call-%d", i%perRun), Kind: "tool", Attempt: 2, Idempotent: true}
			if _, err := j.Do(ctx, s, func(context.Context) (json.RawMessage, error) {
				return nil, fmt.Errorf("a recorded step ran again")
			}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
