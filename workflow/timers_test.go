package workflow

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
)

// TestClose_WaitsForATimeoutBeingApplied: a paused run's timeout fires and
// its continuation is running when the workflow closes; Close cancels it and
// returns only after it ended, so nothing uses the database after Close (it
// used to return at once, leaving the continuation on a closed database).
func TestClose_WaitsForATimeoutBeingApplied(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var ended atomic.Bool
	var b atomic.Int32
	review := counted("b", &b)
	review.HumanReview = &HumanReview{RequiresConfirmation: true, Timeout: 100 * time.Millisecond, OnTimeout: OnTimeoutApprove}
	slow := Step{Name: "slow", Func: func(ctx context.Context, in *StepInput) (FuncResult, error) {
		close(started)
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // still working a little after the cancel
		ended.Store(true)
		return FuncResult{}, ctx.Err()
	}}
	d := openDB(t)
	wf := mustNew(t, Config{ID: "closing", DB: d, Steps: []Step{review, slow}})
	out, _ := wf.Run(context.Background(), run.TextInput("in"), agent.WithUserID("alice"))
	if out == nil || out.Status != run.StatusPaused {
		t.Fatalf("run = %+v", out)
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the timeout's continuation did not start")
	}
	wf.Close()
	if !ended.Load() {
		t.Fatal("Close returned while the timeout's continuation was still running")
	}
	// A closed workflow arms no new timers.
	wf.scheduleTimeouts(out)
	wf.timers.mu.Lock()
	n := len(wf.timers.m)
	wf.timers.mu.Unlock()
	if n != 0 {
		t.Errorf("%d timers armed after Close", n)
	}
}

// TestContinueRun_StopsThePausesTimer: continuing a paused run stops the
// timer of its timeout; the timer stayed armed (holding the run's entry)
// until the timeout, then loaded the run only to find it not paused.
func TestContinueRun_StopsThePausesTimer(t *testing.T) {
	t.Parallel()
	s := fn("b")
	s.HumanReview = &HumanReview{RequiresConfirmation: true, Timeout: 24 * time.Hour}
	wf := mustNew(t, Config{ID: "timer-stop", DB: openDB(t), Steps: []Step{s}})
	out, err := wf.Run(context.Background(), run.TextInput("in"))
	if err != nil || out.Status != run.StatusPaused {
		t.Fatalf("run = %+v, %v", out, err)
	}
	armed := func() bool {
		wf.timers.mu.Lock()
		defer wf.timers.mu.Unlock()
		return wf.timers.m[out.RunID] != nil
	}
	if !armed() {
		t.Fatal("no timer armed for the pause")
	}
	if done, err := wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{answer(out.StepRequirements[0], yes())}); err != nil || done.Status != run.StatusCompleted {
		t.Fatalf("continued = %+v, %v", done, err)
	}
	if armed() {
		t.Error("the timer of the continued pause is still armed")
	}
}
