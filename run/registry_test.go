package run_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/run"
)

var (
	agentA = run.Component{Type: run.TypeAgent, ID: "a"}
	teamA  = run.Component{Type: run.TypeTeam, ID: "a"}
)

func TestRegistry_BeginLookupCancelEnd(t *testing.T) {
	t.Parallel()
	reg := run.NewRegistry()
	cause := errors.New("stop")
	if run.CancelRun(reg, agentA, "r", cause) {
		t.Fatal("cancelled a run that was never registered")
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx, end, err := reg.Begin(ctx, run.Registration{RunID: "r", Component: agentA, UserID: "u"}, cancel)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := reg.Lookup("r")
	if !ok || e.Registration() != (run.Registration{RunID: "r", Component: agentA, UserID: "u"}) {
		t.Fatalf("lookup = %v, %v", e, ok)
	}
	if _, _, err := reg.Begin(context.Background(), run.Registration{RunID: "r", Component: agentA}, cancel); !errors.Is(err, run.ErrAlreadyRunning) {
		t.Errorf("second begin = %v, want ErrAlreadyRunning", err)
	}
	// The run's own context (a server registered it, the agent runs it:
	// with a context of its own below the server's) joins.
	inner, innerCancel := context.WithCancelCause(ctx)
	defer innerCancel(nil)
	jctx, jend, err := reg.Begin(inner, run.Registration{RunID: "r", Component: agentA}, innerCancel)
	if err != nil || jctx != inner {
		t.Fatalf("join = %v", err)
	}
	jend() // a joiner's end leaves the registration alone
	if _, ok := reg.Lookup("r"); !ok {
		t.Fatal("the joiner's end unregistered the run")
	}
	// Another component with the same id (a team named like an agent) cannot cancel it.
	if run.CancelRun(reg, teamA, "r", cause) || ctx.Err() != nil {
		t.Fatal("a team cancelled an agent's run")
	}
	if !run.CancelRun(reg, agentA, "r", cause) || !errors.Is(context.Cause(ctx), cause) || !errors.Is(context.Cause(inner), cause) {
		t.Fatalf("cancel: cause %v", context.Cause(ctx))
	}
	select {
	case <-e.Done():
		t.Fatal("done before the run ended")
	default:
	}
	end()
	end() // idempotent
	<-e.Done()
	if _, ok := reg.Lookup("r"); ok {
		t.Fatal("still registered")
	}
	<-e.Done() // made after the end: closed too
	if _, ok := reg.Lookup("r"); ok || run.CancelRun(reg, agentA, "r", cause) {
		t.Fatal("the run is still registered after it ended")
	}
	// The id is free again.
	_, end2, err := reg.Begin(context.Background(), run.Registration{RunID: "r", Component: agentA}, cancel)
	if err != nil {
		t.Fatal(err)
	}
	end2()
	if _, _, err := reg.Begin(context.Background(), run.Registration{}, cancel); err == nil {
		t.Error("a registration without a run id was accepted")
	}
	if _, _, err := reg.Begin(context.Background(), run.Registration{RunID: "x"}, nil); err == nil {
		t.Error("a registration without a cancel function was accepted")
	}
}

// TestRegistry_OneBeginWinsARace: of concurrent registrations of one run id,
// exactly one succeeds while it is registered, and cancels reach it.
func TestRegistry_OneBeginWinsARace(t *testing.T) {
	t.Parallel()
	reg := run.NewRegistry()
	for range 50 {
		var won atomic.Int32
		var wg sync.WaitGroup
		ends := make(chan func(), 8)
		for range 8 {
			wg.Go(func() {
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				ctx, end, err := reg.Begin(ctx, run.Registration{RunID: "r", Component: agentA}, cancel)
				switch {
				case err == nil:
					won.Add(1)
					run.CancelRun(reg, agentA, "r", context.Canceled)
					if ctx.Err() == nil {
						t.Error("the winner's context was not cancelled")
					}
					ends <- end
				case !errors.Is(err, run.ErrAlreadyRunning):
					t.Error(err)
				}
			})
		}
		wg.Wait()
		close(ends)
		if won.Load() != 1 {
			t.Fatalf("%d registrations won", won.Load())
		}
		for end := range ends {
			end()
		}
	}
}

// BenchmarkRegistry_BeginEnd is the registry's cost per run: one Begin and
// its end, from many goroutines at once (every run of the process goes
// through the one registry).
func BenchmarkRegistry_BeginEnd(b *testing.B) {
	reg := run.NewRegistry()
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := "r" + strconv.FormatInt(n.Add(1), 10)
			_, end, err := reg.Begin(context.Background(), run.Registration{RunID: id, Component: agentA}, cancelNothing)
			if err != nil {
				b.Fatal(err)
			}
			end()
		}
	})
}

func cancelNothing(error) {}
