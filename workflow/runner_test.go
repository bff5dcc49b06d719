package workflow

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
)

// shouter is a step kind the workflow package knows nothing about (think of
// a remote agent): it implements agent.Runner and answers in capitals.
type shouter struct{ c run.Component }

func (s shouter) Component() run.Component { return s.c }
func (s shouter) DB() *db.DB               { return nil }
func (s shouter) CancelRun(string) bool    { return false }

func (s shouter) Run(_ context.Context, in run.Input, opts ...agent.RunOption) (*run.Output, error) {
	o := agent.ResolveOptions(opts...)
	out := &run.Output{RunID: o.RunID, SessionID: o.SessionID, ParentRunID: o.ParentRunID, Status: run.StatusCompleted, Content: strings.ToUpper(in.Text())}
	s.c.Stamp(out)
	return out, nil
}

func (s shouter) Stream(ctx context.Context, in run.Input, opts ...agent.RunOption) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		out, _ := s.Run(ctx, in, opts...)
		started := s.c.Event(run.EventRunStarted)
		started.RunID = out.RunID
		if !yield(started, nil) {
			return
		}
		done := s.c.Event(run.EventRunCompleted)
		done.RunID, done.Content = out.RunID, out.Content
		yield(done, nil)
	}
}

// TestStep_AnyRunnerIsAStep: a workflow runs a step kind it was not written
// for (a custom Runner) and another workflow as a step, with Run and Stream
// alike; the step results and events name each step by its component.
func TestStep_AnyRunnerIsAStep(t *testing.T) {
	t.Parallel()
	shout := shouter{run.Component{Type: run.TypeAgent, ID: "shout", Name: "Shouter"}}
	inner, err := New(Config{ID: "inner", Name: "Inner", Steps: []Step{{Runner: shout}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Model: scripted.Reply("done")}
	wf, err := New(Config{ID: "outer", Steps: []Step{{Runner: shout}, {Name: "nested", Runner: inner}, {Runner: newAgent(t, "last", rec, nil)}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := wf.Steps()[0].Name; got != "shout" {
		t.Errorf("default step name %q", got)
	}
	for _, stream := range []bool{false, true} {
		var out *run.Output
		var evs []run.Event
		if stream {
			for ev, err := range wf.Stream(context.Background(), run.TextInput("hello")) {
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, ev)
			}
		} else {
			out, err = wf.Run(context.Background(), run.TextInput("hello"))
			if err != nil || out.Status != run.StatusCompleted || out.Content != "done" {
				t.Fatalf("run = %+v, %v", out, err)
			}
			for i, want := range []struct{ typ, name, content string }{{"agent", "Shouter", "HELLO"}, {"workflow", "Inner", "HELLO"}, {"agent", "last", "done"}} {
				r := out.StepResults[i]
				if r.ExecutorType != want.typ || r.ExecutorName != want.name || r.Content != want.content || r.Success == nil || !*r.Success {
					t.Errorf("step %d = %+v", i, r)
				}
			}
			continue
		}
		var completed []string
		for _, e := range evs {
			if e.Event == run.EventStepCompleted && e.WorkflowID == "outer" { // the nested workflow's are forwarded too
				completed = append(completed, e.StepName+"="+run.ContentText(e.Content))
			}
		}
		if got := strings.Join(completed, ","); got != "shout=HELLO,nested=HELLO,last=done" {
			t.Errorf("steps completed: %s (events %v)", got, eventNames(evs))
		}
		if last := evs[len(evs)-1]; last.Event != run.EventWorkflowCompleted || last.WorkflowID != "outer" {
			t.Errorf("last event %+v", last)
		}
	}
	if got := rec.inputs(); len(got) != 2 || got[0] != "HELLO" {
		t.Errorf("the last step's inputs = %q", got)
	}
}

// TestStep_IdentityOfStepRuns: every run a workflow run makes is stamped
// with the component that produced it: the workflow's own run and session,
// an agent step's and a team step's runs (parent: the workflow run), and the
// team's member run (parent: the team run); their streamed events too.
func TestStep_IdentityOfStepRuns(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	member := newAgent(t, "writer", scripted.Reply("member text"), d)
	tm, err := team.New(team.Config{ID: "t1", Name: "Crew", DB: d, Members: []*agent.Agent{member}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: team.ToolDelegate, Args: map[string]any{"member_id": "writer", "task": "write"}}}},
		{Content: "team text"},
	}})})
	if err != nil {
		t.Fatal(err)
	}
	first, err := agent.New(agent.Config{ID: "drafter", Name: "Drafter", Model: scripted.Reply("draft"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := New(Config{ID: "wf", Name: "Flow", DB: d, Steps: []Step{{Runner: first}, {Runner: tm}}})
	if err != nil {
		t.Fatal(err)
	}
	var evs []run.Event
	for ev, err := range wf.Stream(context.Background(), run.TextInput("go"), agent.WithSessionID("s")) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	ids := map[string]string{} // event name -> the ids it carried
	for _, e := range evs {
		if e.AgentID == "writer" {
			continue // the team's member, its events forwarded on the team's stream (issue 11)
		}
		ids[string(e.Event)] = e.AgentID + "|" + e.AgentName + "|" + e.TeamID + "|" + e.TeamName + "|" + e.WorkflowID + "|" + e.WorkflowName
	}
	for name, want := range map[string]string{"WorkflowStarted": "||||wf|Flow", "StepStarted": "||||wf|Flow", "RunCompleted": "drafter|Drafter||||",
		"TeamRunCompleted": "||t1|Crew||", "WorkflowCompleted": "||||wf|Flow"} {
		if ids[name] != want {
			t.Errorf("%s carried %q, want %q", name, ids[name], want)
		}
	}
	rows := runsOf(t, d, "s")
	byComponent := map[run.Component]db.Run{}
	for _, r := range rows {
		out, err := r.Output()
		if err != nil {
			t.Fatal(err)
		}
		c := run.Component{Type: out.Type(), ID: out.AgentID + out.TeamID + out.WorkflowID, Name: out.AgentName + out.TeamName + out.WorkflowName}
		if !r.ProducedBy(c) {
			t.Errorf("row %s (%s) not produced by the component its run_data names (%+v)", r.RunID, r.RunType, c)
		}
		byComponent[c] = r
	}
	flow := byComponent[wf.Component()]
	if len(rows) != 4 || flow.RunID == "" {
		t.Fatalf("rows %+v", byComponent)
	}
	for c, parent := range map[run.Component]string{first.Component(): flow.RunID, tm.Component(): flow.RunID,
		{Type: run.TypeAgent, ID: "writer"}: byComponent[tm.Component()].RunID} {
		if r, ok := byComponent[c]; !ok || r.ParentRunID != parent || parent == "" {
			t.Errorf("%+v: row %+v, want parent %s", c, r, parent)
		}
	}
	if s, err := d.GetSession(context.Background(), "s"); err != nil || s.SessionType != run.TypeWorkflow || s.WorkflowID != "wf" || s.AgentID != "" || s.TeamID != "" {
		t.Errorf("session = %+v, %v", s, err)
	}
}

func eventNames(evs []run.Event) []run.EventType {
	out := make([]run.EventType, len(evs))
	for i, e := range evs {
		out[i] = e.Event
	}
	return out
}

// fencedRunner is a custom step kind whose run finds a newer attempt of
// the run holding it (run.ErrFenced), as a durable remote runner would.
type fencedRunner struct{ shouter }

func (f fencedRunner) Run(_ context.Context, _ run.Input, opts ...agent.RunOption) (*run.Output, error) {
	o := agent.ResolveOptions(opts...)
	out := &run.Output{RunID: o.RunID, SessionID: o.SessionID, ParentRunID: o.ParentRunID, Status: run.StatusError, Content: "fenced"}
	f.c.Stamp(out)
	return out, fmt.Errorf("remote: %w", run.ErrFenced)
}

// A custom runner's step whose run was fenced (a newer attempt of the
// workflow run holds it) stops the run as fenced, as an agent or team
// step's does: run (not streamed), the error was dropped, and the step
// counted as one that failed, so the run went on (SkipOnFailure) to its
// next step and saved over the newer attempt's row.
func TestStep_ACustomRunnersFencedRunStopsTheRun(t *testing.T) {
	t.Parallel()
	var c atomic.Int32
	f := fencedRunner{shouter{run.Component{Type: run.TypeAgent, ID: "remote"}}}
	wf := mustNew(t, Config{ID: "fenced", Steps: []Step{{Runner: f, SkipOnFailure: true}, counted("c", &c)}})
	_, err := wf.Run(context.Background(), run.TextInput("go"))
	if !errors.Is(err, run.ErrFenced) {
		t.Errorf("run error %v, want run.ErrFenced", err)
	}
	if c.Load() != 0 {
		t.Errorf("the step after the fenced one ran %d times", c.Load())
	}
}
