package workflow

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// A workflow run started by the durable queue takes the session row its
// claim read (db.WithClaimedSession) instead of reading it again; any other
// run reads the stored row. (The two rows differ here only to tell them
// apart: a claim reads the stored row.)
func TestStart_TakesTheSessionItsClaimRead(t *testing.T) {
	d := openDB(t)
	ctx := context.Background()
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeWorkflow, WorkflowID: "flow",
		SessionData: []byte(`{"session_state":{"from":"stored"}}`)}); err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{ID: "flow", Name: "Flow", DB: d, Steps: []Step{{Name: "noop",
		Func: func(context.Context, *StepInput) (FuncResult, error) { return FuncResult{Content: "ok"}, nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	claimed := &db.Session{SessionID: "s1", SessionType: run.TypeWorkflow, WorkflowID: "flow",
		SessionData: []byte(`{"session_state":{"from":"claim"}}`)}
	for _, c := range []struct {
		runID, want string
	}{{"r2", "stored"}, {"r1", "claim"}} {
		cctx := db.WithClaimedSession(ctx, "r1", claimed)
		out, err := w.Run(cctx, run.TextInput("go"), agent.WithRunID(c.runID), agent.WithSessionID("s1"))
		if err != nil || out.Status != run.StatusCompleted {
			t.Fatalf("run %s: %v, %v", c.runID, out, err)
		}
		if got := out.SessionState["from"]; got != c.want {
			t.Errorf("run %s started from the %v session row, want the %s one", c.runID, got, c.want)
		}
	}
}
