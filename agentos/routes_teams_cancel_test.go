package agentos

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

func TestTeamAndWorkflowRuns_CancelRouteStopsRunsInFlight(t *testing.T) {
	t.Parallel()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	slow := scripted.MustNew(scripted.Config{Latency: time.Minute, Turns: []scripted.Turn{{Content: "late"}}})
	member, err := agent.New(agent.Config{ID: "member", Model: slow, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	// An agent with the team's id: its cancel route must not reach the team's runs.
	twin, err := agent.New(agent.Config{ID: "crew", Model: slow, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	crew, err := team.New(team.Config{ID: "crew", Model: slow, Members: []*agent.Agent{member}, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := workflow.New(workflow.Config{ID: "flow", DB: d, Steps: []workflow.Step{{Runner: member}}})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{twin}, Teams: []*team.Team{crew}, Workflows: []*workflow.Workflow{wf}}, nil)
	for _, base := range []string{"/teams/crew", "/workflows/flow"} {
		acc := decode[map[string]any](t, postForm(t, ts.URL+base+"/runs", map[string]string{"message": "go", "background": "true"}, nil))
		runID, _ := acc["run_id"].(string)
		if runID == "" {
			t.Fatalf("%s background = %v", base, acc)
		}
		eventually(t, base+" run to start", func() bool { return storedStatus(d, runID) == run.StatusRunning })
		if base == "/teams/crew" {
			if res := postForm(t, ts.URL+"/agents/crew/runs/"+runID+"/cancel", nil, nil); res.status != 404 {
				t.Errorf("agent route cancelling a team run = %d %s", res.status, res.body)
			}
		}
		res := postForm(t, ts.URL+base+"/runs/"+runID+"/cancel", nil, nil)
		if res.status != 200 || decode[map[string]any](t, res)["status"] != "CANCELLED" {
			t.Errorf("%s cancel = %d %s", base, res.status, res.body)
		}
		if st := storedStatus(d, runID); st != run.StatusCancelled {
			t.Errorf("%s stored status = %s", base, st)
		}
	}
}

// TestCancelRoute_RunStartedFromGoAnswersOnceStoppedAndStored: the route
// cancels a run that Go code started on a served target and answers only once
// the run has stopped and is stored CANCELLED (it used to answer the status it
// read before cancelling: 200 {"status":"RUNNING"}). The run registry has the
// run from its start, so an agent or team run that has stored nothing yet is
// found too (it used to be 404 until its row existed).
func TestCancelRoute_RunStartedFromGoAnswersOnceStoppedAndStored(t *testing.T) {
	t.Parallel()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	slow := scripted.MustNew(scripted.Config{Latency: time.Minute, Turns: []scripted.Turn{{Content: "late"}}})
	member, err := agent.New(agent.Config{ID: "member", Model: slow, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := workflow.New(workflow.Config{ID: "flow", DB: d, Steps: []workflow.Step{{Runner: member}}})
	if err != nil {
		t.Fatal(err)
	}
	crew, err := team.New(team.Config{ID: "crew", Model: slow, Members: []*agent.Agent{member}, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{member}, Teams: []*team.Team{crew}, Workflows: []*workflow.Workflow{wf}}, nil)
	tests := []struct {
		name, base string
		run        func(ctx context.Context, runID string) (*run.Output, error)
		// stored: the run stores its RUNNING row when it starts (workflows do).
		stored bool
	}{
		{"workflow", "/workflows/flow", func(ctx context.Context, runID string) (*run.Output, error) {
			return wf.Run(ctx, run.TextInput("go"), agent.WithRunID(runID))
		}, true},
		{"agent", "/agents/member", func(ctx context.Context, runID string) (*run.Output, error) {
			return member.Run(ctx, run.TextInput("go"), agent.WithRunID(runID))
		}, false},
		{"team", "/teams/crew", func(ctx context.Context, runID string) (*run.Output, error) {
			return crew.Run(ctx, run.TextInput("go"), agent.WithRunID(runID))
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runID := "go-" + tc.name + "-" + uuid.NewString()
			done := make(chan run.Status, 1)
			go func() {
				out, _ := tc.run(context.Background(), runID)
				if out == nil {
					done <- ""
					return
				}
				done <- out.Status
			}()
			if tc.stored {
				eventually(t, "the run to be stored RUNNING", func() bool { return storedStatus(d, runID) == run.StatusRunning })
			} else {
				eventually(t, "the run to be registered", func() bool { _, ok := run.DefaultRegistry().Lookup(runID); return ok })
			}
			res := postForm(t, ts.URL+tc.base+"/runs/"+runID+"/cancel", nil, nil)
			if res.status != 200 || decode[map[string]any](t, res)["status"] != "CANCELLED" {
				t.Errorf("cancel = %d %s", res.status, res.body)
			}
			if st := storedStatus(d, runID); st != run.StatusCancelled {
				t.Errorf("stored status right after the answer = %s", st)
			}
			select {
			case st := <-done:
				if st != run.StatusCancelled {
					t.Errorf("the run returned %s", st)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the run still runs 30s after the cancel was answered")
			}
		})
	}
}

// stallingDriver holds every write of a CANCELLED run until release closes.
type stallingDriver struct {
	db.Driver
	release chan struct{}
}

func (d stallingDriver) UpsertRun(ctx context.Context, r *db.Run) (*db.Run, error) {
	if r.Status == run.StatusCancelled {
		<-d.release
	}
	return d.Driver.UpsertRun(ctx, r)
}

// TestCancelRoute_RunNotStoppedInTimeIs202: a cancelled run that has not
// stopped (here: its CANCELLED row cannot be written yet) within the route's
// wait is answered 202 with the status it has, never 200, and still ends
// CANCELLED.
func TestCancelRoute_RunNotStoppedInTimeIs202(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	d := db.New("stalling", stallingDriver{Driver: memory.New(), release: release})
	slow := scripted.MustNew(scripted.Config{Latency: time.Minute, Turns: []scripted.Turn{{Content: "late"}}})
	a, err := agent.New(agent.Config{ID: "slow", Model: slow, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Agents: []*agent.Agent{a}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.cancelTimeout = 100 * time.Millisecond
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	res, err := sendForm(ts.URL+"/agents/slow/runs", map[string]string{"message": "wait"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	runID := readFirstFrame(t, br).data["run_id"].(string)
	cancel := postForm(t, ts.URL+"/agents/slow/runs/"+runID+"/cancel", nil, nil)
	if cancel.status != 202 || decode[map[string]any](t, cancel)["status"] != "RUNNING" {
		t.Errorf("cancel of a run still stopping = %d %s, want 202 RUNNING", cancel.status, cancel.body)
	}
	close(release)
	rest, _ := io.ReadAll(br)
	if frames := parseSSE(t, string(rest)); frames[len(frames)-1].name != "RunCancelled" {
		t.Errorf("stream ended with %v", frameNames(frames))
	}
	if st := storedStatus(d, runID); st != run.StatusCancelled {
		t.Errorf("stored %s", st)
	}
	if again := postForm(t, ts.URL+"/agents/slow/runs/"+runID+"/cancel", nil, nil); again.status != 200 {
		t.Errorf("cancel once stopped = %d %s", again.status, again.body)
	}
}
