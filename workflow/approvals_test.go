package workflow

import (
	"context"
	"database/sql"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// TestApprovalIDs_AreUUIDsAndEarlierIDsStillResolve: the approval of an
// executor pause (whose key holds a '#', which a URL cuts off) has a UUID
// id, as Agno's; an approval stored under the id earlier versions used is
// still found when the run is continued or its approvals answer it.
func TestApprovalIDs_AreUUIDsAndEarlierIDsStillResolve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRestartable(t)
	d := r.open()
	var executed atomic.Int32
	wf := mustNew(t, Config{ID: "tidy", DB: d, Steps: []Step{{Name: "cleaner", Runner: confirmAgent(t, "cleaner", d, &executed)}}})
	pause := func() (*run.Output, db.Approval) {
		t.Helper()
		out, err := wf.Run(ctx, run.TextInput("go"), agent.WithUserID("alice"))
		if err != nil || out.Status != run.StatusPaused || len(out.StepRequirements) != 1 {
			t.Fatalf("run %v %v", out, err)
		}
		list, _, err := d.ListApprovals(ctx, db.ApprovalFilter{RunID: out.RunID, Limit: 10, Page: 1})
		if err != nil || len(list) != 1 {
			t.Fatalf("approvals %+v %v", list, err)
		}
		if _, err := uuid.Parse(list[0].ID); err != nil || strings.ContainsAny(list[0].ID, "#:/") {
			t.Fatalf("approval id %q is not a UUID: %v", list[0].ID, err)
		}
		return out, list[0]
	}
	raw, err := sql.Open("sqlite", r.path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// legacy renames an approval to the id an earlier version stored.
	legacy := func(out *run.Output, a db.Approval) string {
		t.Helper()
		old := approvalKey(out.RunID, out.StepRequirements[0])
		if !strings.Contains(old, "#") {
			t.Fatalf("legacy id %q", old)
		}
		if _, err := raw.Exec(`UPDATE agno_approvals SET id = ? WHERE id = ?`, old, a.ID); err != nil {
			t.Fatal(err)
		}
		return old
	}

	// Resolved through /approvals under the old id, then continued with
	// the answers the approvals give.
	out, a := pause()
	old := legacy(out, a)
	if _, ready, err := wf.ApprovalAnswers(ctx, out.RunID); ready || err != nil {
		t.Fatalf("answers before the approval was resolved: ready %v, %v", ready, err)
	}
	if _, err := d.ResolveApproval(ctx, old, db.ApprovalApproved, "bob", nil); err != nil {
		t.Fatal(err)
	}
	answers, ready, err := wf.ApprovalAnswers(ctx, out.RunID)
	if !ready || err != nil {
		t.Fatalf("answers after the old-id approval was approved: ready %v, %v", ready, err)
	}
	final, err := wf.ContinueRun(ctx, out.RunID, answers)
	if err != nil || final.Status != run.StatusCompleted || executed.Load() != 1 {
		t.Fatalf("final %v %v, executed %d", final, err, executed.Load())
	}

	// Continued directly: the answer is recorded on the old-id approval.
	out, a = pause()
	old = legacy(out, a)
	if final, err := wf.ContinueRun(ctx, out.RunID, confirmAll(out.StepRequirements, false)); err != nil || final.Status != run.StatusCompleted {
		t.Fatalf("final %v %v", final, err)
	}
	got, err := d.GetApproval(ctx, old)
	if err != nil || got.Status != db.ApprovalRejected {
		t.Fatalf("old-id approval after the continue: %+v, %v", got, err)
	}
}
