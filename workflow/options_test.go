package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// The options a workflow cannot honour are refused, naming the option,
// before any step runs or any row is stored: never a run without them.
func TestRun_RefusesTheOptionsItCannotHonour(t *testing.T) {
	t.Parallel()
	tests := []struct {
		option string
		opt    agent.RunOption
	}{
		{"WithOutputSchema", agent.WithOutputSchema(json.RawMessage(`{"type":"object"}`), "")},
		{"WithKnowledgeFilters", agent.WithKnowledgeFilters(map[string]any{"planet": "mars"})},
		{"WithAddHistoryToContext", agent.WithAddHistoryToContext(false)},
		{"WithMemberHistory", agent.WithMemberHistory()},
		{"WithTools", agent.WithTools([]run.ToolExecution{{ToolCallID: "c1"}})},
		{"WithRequirements", agent.WithRequirements([]run.Requirement{{ID: "r1"}})},
	}
	d := openDB(t)
	calls := map[string]func(*Workflow, string, agent.RunOption) error{
		"Run": func(wf *Workflow, session string, o agent.RunOption) error {
			out, err := wf.Run(context.Background(), run.TextInput("go"), agent.WithSessionID(session), o)
			if out != nil {
				t.Errorf("Run returned a run (%s)", out.Status)
			}
			return err
		},
		"Stream": func(wf *Workflow, session string, o agent.RunOption) error {
			var evs []run.Event
			var last error
			for ev, err := range wf.Stream(context.Background(), run.TextInput("go"), agent.WithSessionID(session), o) {
				if err != nil {
					last = err
					continue
				}
				evs = append(evs, ev)
			}
			if len(evs) > 0 {
				t.Errorf("Stream yielded %d events, first %s", len(evs), evs[0].Event)
			}
			return last
		},
		"ContinueRun": func(wf *Workflow, _ string, o agent.RunOption) error {
			_, err := wf.ContinueRun(context.Background(), "no-such-run", nil, o)
			return err
		},
	}
	for _, tt := range tests {
		for call, do := range calls {
			t.Run(tt.option+"/"+call, func(t *testing.T) {
				t.Parallel()
				session := tt.option + "-" + call
				var ran atomic.Int32
				wf := mustNew(t, Config{ID: "wf", DB: d, Steps: []Step{{Name: "a", Func: func(context.Context, *StepInput) (FuncResult, error) {
					ran.Add(1)
					return FuncResult{Content: "done"}, nil
				}}}})
				err := do(wf, session, tt.opt)
				if !errors.Is(err, agent.ErrUnsupportedOption) {
					t.Fatalf("err = %v, want agent.ErrUnsupportedOption", err)
				}
				var ue *agent.UnsupportedOptionError
				if !errors.As(err, &ue) || ue.Option != tt.option || ue.Runner.ID != "wf" {
					t.Errorf("err = %#v, want an *agent.UnsupportedOptionError naming %s for wf", err, tt.option)
				}
				if n := ran.Load(); n != 0 {
					t.Errorf("the step ran %d times", n)
				}
				if rows, _, err := d.GetRuns(context.Background(), db.RunFilter{SessionID: session, Limit: 10, Page: 1}); err != nil || len(rows) != 0 {
					t.Errorf("stored runs = %d (%v), want none", len(rows), err)
				}
			})
		}
	}
}

// WithParentRunID stores the workflow run as a child run; a workflow that is
// a step of another is stored with the outer run as its parent.
func TestRun_WithParentRunIDIsStored(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	inner := mustNew(t, Config{ID: "inner", DB: d, Steps: []Step{fn("x")}})
	out, err := inner.Run(context.Background(), run.TextInput("go"), agent.WithParentRunID("p1"))
	if err != nil {
		t.Fatal(err)
	}
	if row, got := storedRun(t, d, out.RunID); got.ParentRunID != "p1" || row.ParentRunID != "p1" {
		t.Errorf("stored parent_run_id = %q (row %q), want p1", got.ParentRunID, row.ParentRunID)
	}
	outer := mustNew(t, Config{ID: "outer", DB: d, Steps: []Step{{Name: "nested", Runner: inner}}})
	for _, stream := range []bool{false, true} {
		var res *run.Output
		if stream {
			for ev, err := range outer.Stream(context.Background(), run.TextInput("go")) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Event == run.EventWorkflowCompleted && ev.WorkflowID == "outer" {
					res = &run.Output{RunID: ev.RunID, SessionID: ev.SessionID}
				}
			}
		} else if res, err = outer.Run(context.Background(), run.TextInput("go")); err != nil {
			t.Fatal(err)
		}
		if res == nil {
			t.Fatal("no outer run")
		}
		rows, _, err := d.GetRuns(context.Background(), db.RunFilter{SessionID: res.SessionID, Limit: 10, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		var innerRows int
		for _, r := range rows {
			if r.RunID == res.RunID {
				continue
			}
			innerRows++
			if r.ParentRunID != res.RunID {
				t.Errorf("stream=%v: nested run %s has parent_run_id %q, want the outer run %s", stream, r.RunID, r.ParentRunID, res.RunID)
			}
		}
		if innerRows != 1 {
			t.Errorf("stream=%v: %d nested runs stored, want 1", stream, innerRows)
		}
	}
}

// WithEventFunc gets the workflow's events while Run executes it, as Stream
// yields them.
func TestRun_WithEventFuncGetsTheEvents(t *testing.T) {
	t.Parallel()
	wf := mustNew(t, Config{ID: "wf", Steps: []Step{fn("a"), fn("b")}})
	want := names(collect(t, wf, "go"))
	var evs []run.Event
	if _, err := wf.Run(context.Background(), run.TextInput("go"), agent.WithEventFunc(func(e run.Event) { evs = append(evs, e) })); err != nil {
		t.Fatal(err)
	}
	if got := names(evs); got != want || len(evs) == 0 {
		t.Errorf("events = %q, want %q", got, want)
	}
	// Streamed, the function gets them too, and the consumer still does.
	var fnEvs []run.Event
	streamed := collect(t, wf, "go", agent.WithEventFunc(func(e run.Event) { fnEvs = append(fnEvs, e) }))
	if names(fnEvs) != want || names(streamed) != want {
		t.Errorf("streamed: func got %q, consumer %q, want %q", names(fnEvs), names(streamed), want)
	}
}

// TestRun_StepRunsRecordTheirStep: the run a step executes (an agent's, a
// nested workflow's, inside a composite too) is stored with the step's id
// as workflow_step_id, as Agno's step sets it on its executor's run; the
// workflow run itself has none unless it is a step.
func TestRun_StepRunsRecordTheirStep(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	inner := mustNew(t, Config{ID: "inner", DB: d, Steps: []Step{fn("x")}})
	writer := newAgent(t, "writer", scripted.Reply("written"), d)
	outer := mustNew(t, Config{ID: "outer", DB: d, Steps: []Step{
		{Name: "write", Runner: writer},
		{Name: "both", Parallel: &Parallel{Steps: []Step{{Name: "nested", Runner: inner}, fn("f")}}},
	}})
	out, err := outer.Run(context.Background(), run.TextInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	byRun := map[string]string{}
	var walk func([]run.StepOutput)
	walk = func(steps []run.StepOutput) {
		for _, s := range steps {
			if s.StepRunID != "" {
				byRun[s.StepRunID] = s.StepID
			}
			walk(s.Steps)
		}
	}
	walk(out.StepResults)
	if len(byRun) != 2 {
		t.Fatalf("step runs %v, want the agent's and the nested workflow's", byRun)
	}
	for runID, stepID := range byRun {
		row, got := storedRun(t, d, runID)
		if stepID == "" || got.WorkflowStepID != stepID || !strings.Contains(string(row.RunData), `"workflow_step_id":"`+stepID+`"`) {
			t.Errorf("run %s of step %q: workflow_step_id %q, run_data %s", runID, stepID, got.WorkflowStepID, row.RunData)
		}
	}
	if _, got := storedRun(t, d, out.RunID); got.WorkflowStepID != "" {
		t.Errorf("the workflow run has workflow_step_id %q", got.WorkflowStepID)
	}
}
