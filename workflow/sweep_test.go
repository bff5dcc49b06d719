package workflow

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// TestSweepTimeouts_OneOfSeveralReplicasAppliesEachTimeout: replicas
// (workflow values on their own handles of one database) sweep at once
// with a clock past the timeout; the timeout applies exactly once.
func TestSweepTimeouts_OneOfSeveralReplicasAppliesEachTimeout(t *testing.T) {
	t.Parallel()
	var b atomic.Int32
	steps := func() []Step {
		s := counted("b", &b)
		s.HumanReview = &HumanReview{RequiresConfirmation: true, Timeout: time.Hour, OnTimeout: OnTimeoutApprove}
		return []Step{s, fn("c")}
	}
	r := newRestartable(t)
	d := r.open()
	first := mustNew(t, Config{ID: "sweep", DB: d, Steps: steps()})
	t.Cleanup(first.Close)
	out, _ := first.Run(context.Background(), run.TextInput("in"), agent.WithUserID("alice"))
	if out == nil || out.Status != run.StatusPaused {
		t.Fatalf("run = %+v", out)
	}
	start := time.Now()
	if n, err := first.SweepTimeouts(context.Background(), start); n != 0 || err != nil {
		t.Fatalf("a sweep before the timeout applied %d, %v", n, err)
	}
	const replicas = 4
	var applied atomic.Int32
	var wg sync.WaitGroup
	for range replicas {
		wf := mustNew(t, Config{ID: "sweep", DB: r.open(), Steps: steps()})
		wg.Go(func() {
			n, err := wf.SweepTimeouts(context.Background(), start.Add(2*time.Hour))
			if err != nil {
				t.Error(err)
			}
			applied.Add(int32(n))
		})
	}
	wg.Wait()
	row, stored := storedRun(t, d, out.RunID)
	if applied.Load() != 1 || b.Load() != 1 || row.Status != run.StatusCompleted || stored.Content != "in>b>c" {
		t.Fatalf("applied %d times, b ran %d times, stored %s %v", applied.Load(), b.Load(), row.Status, stored.Content)
	}
	a, err := d.GetApproval(context.Background(), approvalID(out.RunID, out.StepRequirements[0]))
	if err != nil || a.Status != db.ApprovalExpired || a.ResolvedBy != "timeout" {
		t.Errorf("approval %+v, %v", a, err)
	}
	// A person who resolved first keeps the timeout from applying.
	out2, _ := first.Run(context.Background(), run.TextInput("in"), agent.WithUserID("alice"))
	if _, err := d.ResolveApproval(context.Background(), approvalID(out2.RunID, out2.StepRequirements[0]), db.ApprovalRejected, "bob", nil); err != nil {
		t.Fatal(err)
	}
	if n, err := first.SweepTimeouts(context.Background(), start.Add(2*time.Hour)); n != 0 || err != nil {
		t.Errorf("sweep after a person resolved: %d, %v", n, err)
	}
	if row, _ := storedRun(t, d, out2.RunID); row.Status != run.StatusPaused {
		t.Errorf("run resolved by a person is %s", row.Status)
	}
}
