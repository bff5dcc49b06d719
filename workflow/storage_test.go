package workflow

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// closingAgent is a step agent whose model calls a tool that closes d, then
// answers; stepDB is the database the agent stores its own run in.
func closingAgent(t *testing.T, d, stepDB *db.DB) *agent.Agent {
	t.Helper()
	closeDB := tool.MustFunc(tool.FuncConfig{Name: "close_db", Description: "Closes the database."},
		func(context.Context, struct{}) (string, error) { return "closed", d.Close() })
	a, err := agent.New(agent.Config{ID: "closer", DB: stepDB, Tools: []tool.Tool{closeDB},
		Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{{Name: "close_db"}}}, {Content: "done"}}})})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// streamAll collects a workflow stream's events and its error.
func streamAll(w *Workflow) ([]run.Event, error) {
	var evs []run.Event
	var streamErr error
	for ev, err := range w.Stream(context.Background(), run.TextInput("go")) {
		if err != nil {
			streamErr = err
			continue
		}
		evs = append(evs, ev)
	}
	return evs, streamErr
}

// TestStream_WorkflowRunNotStoredNeverSaysItCompleted: the workflow's
// database fails during the run; the stream ends with a StorageError
// WorkflowError and an error wrapping agent.ErrStorage, never with
// WorkflowCompleted, and no event carries the database's error text.
func TestStream_WorkflowRunNotStoredNeverSaysItCompleted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// stepStoresToo: the step agent stores its run in the failing database.
		stepStoresToo bool
		wantStepError bool
	}{
		{"the step's run is stored elsewhere", false, false},
		{"the step's own run cannot be stored either", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := openDB(t)
			stepDB := openDB(t)
			if tt.stepStoresToo {
				stepDB = d
			}
			w, err := New(Config{ID: "wf", DB: d, Steps: []Step{{Runner: closingAgent(t, d, stepDB)}}})
			if err != nil {
				t.Fatal(err)
			}
			evs, streamErr := streamAll(w)
			if !errors.Is(streamErr, agent.ErrStorage) {
				t.Fatalf("stream error %v, want agent.ErrStorage", streamErr)
			}
			for _, e := range evs {
				if e.Event == run.EventWorkflowCompleted {
					t.Fatal("WorkflowCompleted for a workflow run that was not stored")
				}
				if c, _ := e.Content.(string); strings.Contains(c, "database is closed") {
					t.Fatalf("%s carries the database's error: %q", e.Event, e.Content)
				}
			}
			last := evs[len(evs)-1]
			if last.Event != run.EventWorkflowError || last.ErrorType != "StorageError" {
				t.Fatalf("last event %+v, want WorkflowError StorageError", last)
			}
			var stepErr bool
			for _, e := range evs {
				stepErr = stepErr || e.Event == run.EventStepError
			}
			if stepErr != tt.wantStepError {
				t.Fatalf("StepError sent: %v, want %v (events %v)", stepErr, tt.wantStepError, evs)
			}
		})
	}
}

// TestRun_WorkflowStorageFailures: a workflow whose session cannot be read
// does not start; one whose step run or own run cannot be stored returns an
// error wrapping agent.ErrStorage, and its content names no database error.
func TestRun_WorkflowStorageFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	closed := openDB(t)
	w, err := New(Config{ID: "wf", DB: closed, Steps: []Step{{Runner: newAgent(t, "a", scripted.Reply("x"), nil)}}})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	out, err := w.Run(ctx, run.TextInput("go"))
	if out != nil || !errors.Is(err, agent.ErrStorage) {
		t.Fatalf("unreadable session: %+v, %v; want no run and agent.ErrStorage", out, err)
	}
	evs, streamErr := streamAll(w)
	if len(evs) != 0 || !errors.Is(streamErr, agent.ErrStorage) {
		t.Fatalf("unreadable session: stream events %v, error %v", evs, streamErr)
	}

	d := openDB(t)
	w, err = New(Config{ID: "wf", DB: d, Steps: []Step{{Runner: closingAgent(t, d, d)}}})
	if err != nil {
		t.Fatal(err)
	}
	out, err = w.Run(ctx, run.TextInput("go"))
	if out == nil || !errors.Is(err, agent.ErrStorage) || out.Status != run.StatusError {
		t.Fatalf("step run not stored: %+v, %v; want an ERROR run and agent.ErrStorage", out, err)
	}
	if c := out.ContentString(); !strings.Contains(c, "storage error") || strings.Contains(c, "database is closed") {
		t.Fatalf("content %q", c)
	}
}
