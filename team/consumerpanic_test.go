package team

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// A stream consumer whose loop body panics on a delegated member's event
// (the member's events reach it through agent.Emit on the member call's
// stack, past callMember's recover) gets its own panic value back, and the
// team's and the member's runs are stored CANCELLED, with no delegation
// recorded as failed.
func TestDelegate_AConsumerPanicReachesTheConsumerAndCancelsTheRuns(t *testing.T) {
	d := openDB(t)
	member := mustAgent(t, agent.Config{ID: "m1", DB: d, Model: script(answer("member answer"))})
	leader := script(call(ToolDelegate, map[string]any{"member_id": "m1", "task": "work"}), answer("fin"))
	tm := mustTeam(t, Config{ID: "t", DB: d, Model: leader, Members: []*agent.Agent{member}})
	got := func() (p any) {
		defer func() { p = recover() }()
		for ev, err := range tm.Stream(context.Background(), run.TextInput("go")) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.AgentID == "m1" {
				panic("the consumer's bug")
			}
		}
		return nil
	}()
	if got != "the consumer's bug" {
		t.Fatalf("the consumer recovered %#v, want its own panic value", got)
	}
	rows, _, err := d.GetRuns(context.Background(), db.RunFilter{Limit: 10, Page: 1})
	if err != nil || len(rows) != 2 {
		t.Fatalf("stored runs %d, %v; want the team's and the member's", len(rows), err)
	}
	for _, r := range rows {
		o, err := r.Output()
		if err != nil {
			t.Fatal(err)
		}
		if o.Status != run.StatusCancelled {
			t.Errorf("%s run %s stored %s, want CANCELLED", r.RunType, r.RunID, o.Status)
		}
		for _, tl := range o.Tools {
			if tl.ToolCallError {
				t.Errorf("the delegation was recorded as failed: %s", tl.Result)
			}
		}
	}
}
