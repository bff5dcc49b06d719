package workflow

import (
	"context"
	"strings"
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

// TestSweepTimeouts_EachOfARunsTimeoutsApplies: a run paused on two
// requirements with different timeouts (two Parallel branches) gets each
// applied when it passes; the second was never applied (the first, applied
// already, was claimed again, which failed, so the run stayed PAUSED). A
// person continuing the run between the two answers the one still waiting,
// by continuing it or by resolving its approval.
func TestSweepTimeouts_EachOfARunsTimeoutsApplies(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"sweep", "continue", "approval"} {
		byPerson := by != "sweep"
		var x, y atomic.Int32
		sx := counted("x", &x)
		sx.HumanReview = &HumanReview{RequiresConfirmation: true, Timeout: time.Hour, OnTimeout: OnTimeoutSkip}
		sy := counted("y", &y)
		sy.HumanReview = &HumanReview{RequiresConfirmation: true, Timeout: 2 * time.Hour, OnTimeout: OnTimeoutApprove}
		d := openDB(t)
		wf := mustNew(t, Config{ID: "two-timeouts", DB: d, Steps: []Step{{Name: "p", Parallel: &Parallel{Steps: []Step{sx, sy}}}, fn("after")}})
		wf.Close() // no in-process timers: the sweeps apply the timeouts
		out, err := wf.Run(context.Background(), run.TextInput("in"), agent.WithUserID("alice"))
		if err != nil || out.Status != run.StatusPaused || len(out.StepRequirements) != 2 {
			t.Fatalf("run = %+v, %v", out, err)
		}
		start := time.Now()
		if _, err := wf.SweepTimeouts(context.Background(), start.Add(90*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if row, stored := storedRun(t, d, out.RunID); row.Status != run.StatusPaused || stored.StepRequirements[0].Confirmed == nil || stored.StepRequirements[1].Confirmed != nil {
			t.Fatalf("after the first timeout: %s %+v", row.Status, stored.StepRequirements)
		}
		answers := []run.StepRequirement{answer(out.StepRequirements[0], yes()), answer(out.StepRequirements[1], yes())}
		if by == "approval" {
			if _, err := d.ResolveApproval(context.Background(), approvalID(out.RunID, out.StepRequirements[1]), db.ApprovalApproved, "bob", nil); err != nil {
				t.Fatal(err)
			}
			var ready bool
			if answers, ready, err = wf.ApprovalAnswers(context.Background(), out.RunID); err != nil || !ready || len(answers) != 1 {
				t.Fatalf("approval answers = %+v, %v, %v; want y's, ready", answers, ready, err)
			}
		}
		if byPerson {
			// The timed-out requirement needs no answer; an answer sent
			// for it does not undo its timeout.
			if _, err := wf.ContinueRun(db.WithUserScope(context.Background(), "alice"), out.RunID, answers); err != nil {
				t.Fatal(err)
			}
		} else if _, err := wf.SweepTimeouts(context.Background(), start.Add(3*time.Hour)); err != nil {
			t.Fatal(err)
		}
		row, stored := storedRun(t, d, out.RunID)
		if row.Status != run.StatusCompleted || x.Load() != 0 || y.Load() != 1 || !strings.HasSuffix(stored.ContentString(), "in>y>after") {
			t.Errorf("by %s: %s, x ran %d, y ran %d, content %q", by, row.Status, x.Load(), y.Load(), stored.ContentString())
		}
	}
}

// TestSweepTimeouts_ARunWithoutAUserTimesOut: the timeout of a run started
// without a user id applies (a sweep, ResumeExpired at start); its run was
// looked up in the scope of user "", which finds no run stored without a
// user, so it stayed PAUSED and every sweep failed with not found.
func TestSweepTimeouts_ARunWithoutAUserTimesOut(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"sweep", "resume"} {
		d := openDB(t)
		steps := func() []Step {
			s := fn("b")
			s.HumanReview = &HumanReview{RequiresConfirmation: true, Timeout: time.Hour, OnTimeout: OnTimeoutApprove}
			return []Step{s}
		}
		wf := mustNew(t, Config{ID: "anonymous", DB: d, Steps: steps()})
		wf.Close() // no in-process timer
		out, err := wf.Run(context.Background(), run.TextInput("in"))
		if err != nil || out.Status != run.StatusPaused {
			t.Fatalf("run = %+v, %v", out, err)
		}
		var n int
		if how == "sweep" {
			n, err = wf.SweepTimeouts(context.Background(), time.Now().Add(2*time.Hour))
		} else {
			// A restart after the timeout passed: the stored run's timeout
			// is moved into the past, as time would have.
			_, stored := storedRun(t, d, out.RunID)
			stored.StepRequirements[0].TimeoutAt = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
			row, uerr := db.RunFromOutput(stored)
			if uerr == nil {
				_, uerr = d.UpsertRun(context.Background(), row)
			}
			if uerr != nil {
				t.Fatal(uerr)
			}
			n, err = mustNew(t, Config{ID: "anonymous", DB: d, Steps: steps()}).ResumeExpired(context.Background())
		}
		if row, _ := storedRun(t, d, out.RunID); n != 1 || err != nil || row.Status != run.StatusCompleted {
			t.Errorf("%s: applied %d, %v; run %s", how, n, err, row.Status)
		}
	}
}

// TestResumeExpired_AppliesTheTimeoutsOfMoreThanAPageOfRuns: at start,
// every PAUSED run whose timeout passed is ended, however many; applying
// them page by page ended the first hundred, and the second page, read
// after they left the PAUSED runs, skipped as many others.
func TestResumeExpired_AppliesTheTimeoutsOfMoreThanAPageOfRuns(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	steps := func() []Step {
		s := fn("b")
		s.HumanReview = &HumanReview{RequiresConfirmation: true, Timeout: time.Nanosecond, OnTimeout: OnTimeoutApprove}
		return []Step{s}
	}
	before := mustNew(t, Config{ID: "many-paused", DB: d, Steps: steps()})
	before.Close() // stopped before the timeouts passed: no timers
	const runs = 130
	for range runs {
		out, err := before.Run(context.Background(), run.TextInput("in"), agent.WithUserID("alice"))
		if err != nil || out.Status != run.StatusPaused {
			t.Fatalf("run = %+v, %v", out, err)
		}
	}
	n, err := mustNew(t, Config{ID: "many-paused", DB: d, Steps: steps()}).ResumeExpired(context.Background())
	if n != runs || err != nil {
		t.Errorf("applied %d timeouts, %v; want %d", n, err, runs)
	}
	paused, _, err := d.GetRuns(context.Background(), db.RunFilter{WorkflowID: "many-paused", Statuses: []run.Status{run.StatusPaused}, Limit: 10, Page: 1})
	if err != nil || len(paused) != 0 {
		t.Errorf("%d runs still PAUSED, %v", len(paused), err)
	}
}

// TestSweepTimeouts_ARunCancelledByItsTimeoutIsSoOnItsApprovals: a run a
// timeout cancels (on_timeout cancel) says CANCELLED on its approvals, the
// one that expired and the one still pending; they said PAUSED.
func TestSweepTimeouts_ARunCancelledByItsTimeoutIsSoOnItsApprovals(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	soon, later := fn("soon"), fn("later")
	soon.HumanReview = &HumanReview{RequiresConfirmation: true, Timeout: time.Hour}
	later.HumanReview = &HumanReview{RequiresConfirmation: true}
	wf := mustNew(t, Config{ID: "cancel-by-timeout", DB: d, Steps: []Step{{Name: "p", Parallel: &Parallel{Steps: []Step{soon, later}}}}})
	wf.Close()
	out, err := wf.Run(context.Background(), run.TextInput("in"), agent.WithUserID("alice"))
	if err != nil || out.Status != run.StatusPaused {
		t.Fatalf("run = %+v, %v", out, err)
	}
	if n, err := wf.SweepTimeouts(context.Background(), time.Now().Add(2*time.Hour)); n != 1 || err != nil {
		t.Fatalf("sweep applied %d, %v", n, err)
	}
	if row, _ := storedRun(t, d, out.RunID); row.Status != run.StatusCancelled {
		t.Fatalf("run %s", row.Status)
	}
	list, _, err := d.ListApprovals(context.Background(), db.ApprovalFilter{RunID: out.RunID, Limit: 10, Page: 1})
	if err != nil || len(list) != 2 {
		t.Fatalf("approvals = %+v, %v", list, err)
	}
	for _, a := range list {
		if a.RunStatus != string(run.StatusCancelled) {
			t.Errorf("approval %s (%s): run status %s, want CANCELLED", a.ID, a.Status, a.RunStatus)
		}
	}
}
