package postgres_test

import (
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// A conversation turn with history is two round trips once the statements
// are prepared: the session and its history runs in one statement, the
// run's write (advisory lock and upsert) in one implicit transaction. A
// third would be a separate session or history read, or a COMMIT of its own.
// Counted on the wire by a proxy.
func TestConversationTurn_TwoRoundTrips(t *testing.T) {
	t.Parallel()
	d, trips := openCounted(t)
	m, err := scripted.New(scripted.Config{Turns: []scripted.Turn{{Content: "Noted."}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Name: "Turns", DB: d, AddHistoryToContext: true, Model: m})
	if err != nil {
		t.Fatal(err)
	}
	turn := func(i int) {
		t.Helper()
		out, err := a.Run(ctx, run.TextInput(fmt.Sprintf("message %d", i)), agent.WithSessionID("conv"))
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != run.StatusCompleted {
			t.Fatalf("turn %d: status %s", i, out.Status)
		}
	}
	// The history read's text depends on how many runs the agent holds
	// (up to the last 3 and the one before): from the fifth turn on it is
	// the same statement, prepared once (the pool has one connection).
	const warm = 6
	for i := range warm {
		turn(i)
	}
	for i := warm; i < warm+3; i++ {
		trips.reset()
		turn(i)
		if n := trips.count(); n != 2 {
			t.Errorf("turn %d: %d round trips, want 2 (history read, run write)", i, n)
		}
	}
	runs, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: "conv", Limit: 20, Page: 1})
	if err != nil || len(runs) != warm+3 {
		t.Fatalf("%d runs stored, want %d (%v)", len(runs), warm+3, err)
	}
}
