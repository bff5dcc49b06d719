//go:build !race

// The race detector changes what escapes and makes sync.Pool drop items, so
// allocation counts under -race are not the product's: these tests build
// without it (.ci/run runs them so).

package agent

import (
	"context"
	"iter"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// TestRun_HistoryTurnAllocations: a turn of a conversation kept in the
// in-memory store, with its last runs in the context and a model that
// reports tokens, is issue 12's hot path. 62 allocations a turn before the
// session's state was read without encoding/json and its metrics were read,
// added to and written without reflection; 41 after.
func TestRun_HistoryTurnAllocations(t *testing.T) {
	a := mustAgent(t, Config{Name: "Allocs", DB: db.New("", memory.New()), AddHistoryToContext: true,
		Model: scripted.Reply("Noted.")})
	ctx := context.Background()
	in := run.TextInput("Tell me more.")
	for range 4 { // history full (the last 3 runs) from here on
		if _, err := a.Run(ctx, in, WithSessionID("s1")); err != nil {
			t.Fatal(err)
		}
	}
	n := testing.AllocsPerRun(50, func() {
		if _, err := a.Run(ctx, in, WithSessionID("s1")); err != nil {
			t.Fatal(err)
		}
	})
	if n > 44 {
		t.Fatalf("a history turn allocates %v times, want ≤ 44", n)
	}
	t.Logf("%v allocations a turn", n)
}

// tokenless answers "Noted." and reports no usage: a run of it adds nothing
// to its session's metrics.
type tokenless struct{}

func (tokenless) Info() model.Info { return model.Info{ID: "tokenless", Provider: "test"} }

func (tokenless) Invoke(context.Context, *model.Request) (*model.Response, error) {
	return &model.Response{Message: model.Text(model.RoleAssistant, "Noted.")}, nil
}

func (tokenless) Stream(context.Context, *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) { yield(&model.Chunk{Content: "Noted."}, nil) }
}

// TestRun_TokenlessHistoryTurnAllocations: a history turn whose run needs
// none of the run's rarely used fields (no session state, no tokens to
// count) allocates no runExtras; joining the session's line (the
// sessionline package) once did, 24 allocations a 25-turn conversation.
func TestRun_TokenlessHistoryTurnAllocations(t *testing.T) {
	a := mustAgent(t, Config{Name: "Allocs", DB: db.New("", memory.New()), AddHistoryToContext: true, Model: tokenless{}})
	ctx := context.Background()
	in := run.TextInput("Tell me more.")
	for range 4 {
		if _, err := a.Run(ctx, in, WithSessionID("s1")); err != nil {
			t.Fatal(err)
		}
	}
	n := testing.AllocsPerRun(50, func() {
		if _, err := a.Run(ctx, in, WithSessionID("s1")); err != nil {
			t.Fatal(err)
		}
	})
	if n > 28 {
		t.Fatalf("a tokenless history turn allocates %v times, want ≤ 28", n)
	}
	t.Logf("%v allocations a turn", n)
}
