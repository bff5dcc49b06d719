package workflow

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
)

// cancelTargets are an agent, a team (its leader waiting for a member) and a
// workflow (its step waiting), each of whose runs waits for its model until
// cancelled.
func cancelTargets(t *testing.T, d *db.DB) []agent.Runner {
	t.Helper()
	slow := func() *scripted.Model {
		return scripted.MustNew(scripted.Config{Latency: time.Minute, Turns: []scripted.Turn{{Content: "late"}}})
	}
	solo, err := agent.New(agent.Config{ID: "solo", Model: slow(), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	member, err := agent.New(agent.Config{ID: "member", Model: slow(), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	crew, err := team.New(team.Config{ID: "crew", DB: d, Members: []*agent.Agent{member}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: team.ToolDelegate, Args: map[string]any{"member_id": "member", "task": "wait"}}}},
		{Content: "never"},
	}})})
	if err != nil {
		t.Fatal(err)
	}
	step, err := agent.New(agent.Config{ID: "step", Model: slow(), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	flow, err := New(Config{ID: "flow", DB: d, Steps: []Step{{Runner: step}}})
	if err != nil {
		t.Fatal(err)
	}
	return []agent.Runner{solo, crew, flow}
}

// TestCancel_ThroughTheOneRegistry: agent, team and workflow runs are
// registered in run.DefaultRegistry under their component while they
// execute, and only then: a cancel before the run registers finds nothing
// and leaves the run alone, a cancel while it executes stops it (stored
// CANCELLED), a cancel after it ended finds nothing. Run it with -race
// -count=20: the racing variant cancels while the run is registering.
func TestCancel_ThroughTheOneRegistry(t *testing.T) {
	t.Parallel()
	d := db.New("", memory.New())
	for _, r := range cancelTargets(t, d) {
		c := r.Component()
		t.Run(string(c.Type), func(t *testing.T) {
			t.Parallel()
			for _, racing := range []bool{false, true} {
				runID := uuid.NewString()
				if !racing && r.CancelRun(runID) {
					t.Fatal("cancelled a run that has not started")
				}
				done := make(chan *run.Output, 1)
				go func() {
					out, _ := r.Run(context.Background(), run.TextInput("go"), agent.WithRunID(runID), agent.WithUserID("u"))
					done <- out
				}()
				var e run.Execution
				if racing {
					for !r.CancelRun(runID) {
						runtime.Gosched()
					}
				} else {
					for ok := false; !ok; e, ok = run.DefaultRegistry().Lookup(runID) {
						runtime.Gosched()
					}
					if got := e.Registration(); got != (run.Registration{RunID: runID, Component: c, UserID: "u"}) {
						t.Errorf("registered as %+v", got)
					}
					select {
					case out := <-done:
						t.Fatalf("the run ended without being cancelled: %+v", out)
					case <-time.After(20 * time.Millisecond):
					}
					if !r.CancelRun(runID) {
						t.Fatal("the registered run was not found")
					}
				}
				var out *run.Output
				select {
				case out = <-done:
				case <-time.After(30 * time.Second):
					t.Fatal("the run still runs 30s after it was cancelled")
				}
				if out == nil || out.Status != run.StatusCancelled || !strings.Contains(out.ContentString(), "CancelRun") {
					t.Fatalf("run = %+v", out)
				}
				if e != nil {
					select {
					case <-e.Done():
					default:
						t.Error("the registration did not end with the run")
					}
				}
				if _, ok := run.DefaultRegistry().Lookup(runID); ok || r.CancelRun(runID) {
					t.Error("the run is still registered after it returned")
				}
				row, err := d.GetRun(context.Background(), runID)
				if err != nil || row.Status != run.StatusCancelled || !row.ProducedBy(c) {
					t.Errorf("stored %+v, %v", row, err)
				}
			}
		})
	}
}

// TestCancel_ARunIDExecutingDoesNotStartAgain: a second run with the id of
// a run that executes is refused before it starts (it would overwrite the
// first one's row), whatever its kind.
func TestCancel_ARunIDExecutingDoesNotStartAgain(t *testing.T) {
	t.Parallel()
	d := db.New("", memory.New())
	targets := cancelTargets(t, d)
	runID := uuid.NewString()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = targets[0].Run(context.Background(), run.TextInput("go"), agent.WithRunID(runID))
	}()
	for _, ok := run.DefaultRegistry().Lookup(runID); !ok; _, ok = run.DefaultRegistry().Lookup(runID) {
		runtime.Gosched()
	}
	for _, r := range targets {
		out, err := r.Run(context.Background(), run.TextInput("again"), agent.WithRunID(runID))
		if out != nil || !errors.Is(err, run.ErrAlreadyRunning) {
			t.Errorf("%s: second run = %+v, %v", r.Component().Type, out, err)
		}
		for ev, err := range r.Stream(context.Background(), run.TextInput("again"), agent.WithRunID(runID)) {
			if !errors.Is(err, run.ErrAlreadyRunning) {
				t.Errorf("%s: second stream yielded %+v, %v", r.Component().Type, ev, err)
			}
		}
	}
	targets[0].CancelRun(runID)
	<-done
}
