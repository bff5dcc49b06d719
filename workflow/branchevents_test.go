package workflow

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/agentryhq/agentry/run"
)

// goroutineID is the number runtime.Stack prints for the calling
// goroutine (tests only: which goroutine runs a stream's loop body).
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := bytes.Fields(buf)
	if len(f) < 2 {
		return ""
	}
	return string(f[1])
}

// The loop body of a range over Stream runs on the goroutine that ranges,
// for every event, the events of a Parallel's branches (nested ones too)
// included: they were delivered from the branches' goroutines, so a loop
// body using t.Fatal, a goroutine-bound resource or a panic its caller
// recovers from did so on a goroutine it did not know of.
func TestStream_BranchEventsAreDeliveredOnTheConsumersGoroutine(t *testing.T) {
	t.Parallel()
	wf := mustNew(t, Config{ID: "branches", Steps: []Step{fn("first"),
		{Name: "p", Parallel: &Parallel{Steps: []Step{fn("a"), fn("b"),
			{Name: "inner", Parallel: &Parallel{Steps: []Step{fn("c"), fn("d")}}}}}},
		fn("after")}})
	me := goroutineID()
	branchEvents := 0
	for ev, err := range wf.Stream(context.Background(), run.TextInput("x")) {
		if err != nil {
			t.Fatal(err)
		}
		if g := goroutineID(); g != me {
			t.Fatalf("event %s (step %s) delivered on goroutine %s, the consumer's is %s", ev.Event, ev.StepName, g, me)
		}
		if ev.Event == run.EventStepCompleted && (ev.StepName == "a" || ev.StepName == "c") {
			branchEvents++
		}
	}
	if branchEvents != 2 {
		t.Errorf("saw %d StepCompleted of branch steps a and c, want 2", branchEvents)
	}
}

// A loop body that panics on a branch's event panics in its own range
// statement, where its caller can recover: it took the whole process down.
// The run is cancelled and its branches end (none is left blocked
// delivering an event nobody reads): the branch whose event it was runs
// its step with the run's context cancelled.
func TestStream_APanickingLoopBodyOnABranchEventReachesTheConsumer(t *testing.T) {
	t.Parallel()
	ended := make(chan error, 1)
	slow := Step{Name: "slow", Func: func(ctx context.Context, _ *StepInput) (FuncResult, error) {
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
		case <-time.After(time.Minute):
			ended <- nil
		}
		return FuncResult{Content: "late"}, nil
	}}
	wf := mustNew(t, Config{ID: "panicky-consumer", Steps: []Step{{Name: "p", Parallel: &Parallel{Steps: []Step{slow, fn("quick")}}}}})
	recovered := func() (p any) {
		defer func() { p = recover() }()
		for ev, err := range wf.Stream(context.Background(), run.TextInput("x")) {
			if err != nil {
				t.Error(err)
				return nil
			}
			if ev.Event == run.EventStepStarted && ev.StepName == "slow" {
				panic("the consumer's bug")
			}
		}
		return nil
	}()
	if recovered != "the consumer's bug" {
		t.Fatalf("recovered %v, want the loop body's panic", recovered)
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Error("the other branch was not cancelled")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the other branch never ended")
	}
}
