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
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/tool"
)

type noArgs struct{}

// confirmAgent is an agent whose one tool needs a confirmation: its run
// pauses on its first turn and, continued, answers "deleted it".
func confirmAgent(t *testing.T, id string, d *db.DB, executed *atomic.Int32) *agent.Agent {
	t.Helper()
	del := tool.MustFunc(tool.FuncConfig{Name: "delete_file", Description: "Deletes the file.", RequiresConfirmation: true},
		func(context.Context, noArgs) (string, error) { executed.Add(1); return "gone", nil })
	a, err := agent.New(agent.Config{ID: id, DB: d, Tools: []tool.Tool{del}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "delete_file"}}},
		{Content: "deleted it"},
	}})})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// confirmAll answers every executor requirement of reqs with confirmed.
func confirmAll(reqs []run.StepRequirement, confirmed bool) []run.StepRequirement {
	out := make([]run.StepRequirement, len(reqs))
	for i, r := range reqs {
		b, _ := json.Marshal(r)
		var c run.StepRequirement
		_ = json.Unmarshal(b, &c)
		for k := range c.ExecutorRequirements {
			c.ExecutorRequirements[k].ToolExecution.Confirmed = &confirmed
		}
		out[i] = c
	}
	return out
}

func TestExecutorPause_AnAgentStepPausedForAToolPausesTheWorkflow(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		name := "run"
		if streamed {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var a, c, executed atomic.Int32
			steps := func(d *db.DB) []Step {
				return []Step{counted("a", &a), {Name: "cleaner", Runner: confirmAgent(t, "cleaner", d, &executed)}, counted("c", &c)}
			}
			r := newRestartable(t)
			d := r.open()
			wf := mustNew(t, Config{ID: "tidy", DB: d, Steps: steps(d)})
			opts := []agent.RunOption{agent.WithSessionID("s"), agent.WithUserID("alice")}
			var out *run.Output
			if streamed {
				evs := collect(t, wf, "in", opts...)
				if got := names(evs); got != "WorkflowStarted StepStarted:a StepCompleted:a StepStarted:cleaner StepExecutorPaused:cleaner WorkflowPaused" {
					t.Fatalf("events %s", got)
				}
				var err error
				_, out = storedRun(t, d, evs[len(evs)-1].RunID)
				if err != nil {
					t.Fatal(err)
				}
				var sawPaused bool
				for _, e := range evs {
					sawPaused = sawPaused || e.Event == run.EventRunPaused
				}
				if !sawPaused {
					t.Error("the agent's RunPaused event was not forwarded")
				}
			} else {
				var err error
				if out, err = wf.Run(context.Background(), run.TextInput("in"), opts...); err != nil {
					t.Fatal(err)
				}
			}
			row, stored := storedRun(t, d, out.RunID)
			if row.Status != run.StatusPaused || len(stored.StepRequirements) != 1 || stored.PauseKind != "executor" || stored.PausedStepName != "cleaner" {
				t.Fatalf("stored %s %+v kind %q", row.Status, stored.StepRequirements, stored.PauseKind)
			}
			req := stored.StepRequirements[0]
			if !req.RequiresExecutorInput || req.ExecutorID != "cleaner" || req.ExecutorType != "agent" || len(req.ExecutorRequirements) != 1 ||
				req.ExecutorRequirements[0].ToolExecution.ToolName != "delete_file" || req.ExecutorSessionID != "s" {
				t.Fatalf("requirement %+v", req)
			}
			// Agno's executor keys.
			var rd map[string]any
			_ = json.Unmarshal(row.RunData, &rd)
			sr := rd["step_requirements"].([]any)[0].(map[string]any)
			for _, k := range []string{"requires_executor_input", "executor_requirements", "executor_id", "executor_name", "executor_run_id", "executor_type", "executor_session_id"} {
				if _, ok := sr[k]; !ok {
					t.Errorf("stored requirement lacks %s: %v", k, sr)
				}
			}
			agentRow, err := d.GetRun(context.Background(), req.ExecutorRunID)
			if err != nil || agentRow.Status != run.StatusPaused || agentRow.ParentRunID != out.RunID || agentRow.AgentID != "cleaner" {
				t.Fatalf("agent run %+v, %v", agentRow, err)
			}
			ctx := db.WithUserScope(context.Background(), "alice")
			if _, err := wf.ContinueRun(ctx, out.RunID, []run.StepRequirement{req}); !errors.Is(err, ErrUnresolved) {
				t.Fatalf("continuing without resolving the tool: %v", err)
			}

			// Restart: new handles, new agent and workflow values.
			d.Close()
			d2 := r.open()
			wf2 := mustNew(t, Config{ID: "tidy", DB: d2, Steps: steps(d2)})
			answers := confirmAll(stored.StepRequirements, true)
			var final *run.Output
			if streamed {
				var got []string
				for ev, err := range wf2.ContinueStream(ctx, out.RunID, answers) {
					if err != nil {
						t.Fatal(err)
					}
					if ev.Event == run.EventRunContinued || ev.Event == run.EventRunCompleted || strings.HasPrefix(string(ev.Event), "Step") || strings.HasPrefix(string(ev.Event), "Workflow") {
						got = append(got, string(ev.Event))
					}
				}
				want := "WorkflowStarted StepStarted StepExecutorContinued RunContinued RunCompleted StepCompleted StepStarted StepCompleted WorkflowCompleted"
				if s := strings.Join(got, " "); s != want {
					t.Errorf("continued events\n got %s\nwant %s", s, want)
				}
				_, final = storedRun(t, d2, out.RunID)
			} else {
				if final, err = wf2.ContinueRun(ctx, out.RunID, answers); err != nil {
					t.Fatal(err)
				}
			}
			if final.Status != run.StatusCompleted || final.Content != "deleted it>c" || executed.Load() != 1 || a.Load() != 1 || c.Load() != 1 {
				t.Fatalf("final %s %v; executed %d a %d c %d", final.Status, final.Content, executed.Load(), a.Load(), c.Load())
			}
			agentRow, err = d2.GetRun(context.Background(), req.ExecutorRunID)
			if err != nil || agentRow.Status != run.StatusCompleted || agentRow.ParentRunID != out.RunID {
				t.Fatalf("agent run after continue %+v, %v", agentRow, err)
			}
			rows := runsOf(t, d2, "s")
			if len(rows) != 2 {
				t.Errorf("%d rows, want the workflow run and one agent run", len(rows))
			}
		})
	}
}

func TestExecutorPause_NestedInParallelInLoopInRouter(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var executed, b atomic.Int32
	wf := mustNew(t, Config{ID: "nest", DB: d, Steps: []Step{{Name: "route", Router: &Router{
		Selector: func(*StepInput) ([]string, error) { return []string{"loop"}, nil },
		Choices: []Step{{Name: "loop", Loop: &Loop{MaxIterations: 1, Steps: []Step{{Name: "par", Parallel: &Parallel{Steps: []Step{
			{Name: "cleaner", Runner: confirmAgent(t, "cleaner", d, &executed)}, counted("b", &b),
		}}}}}}},
	}}}})
	ctx := db.WithUserScope(context.Background(), "u")
	out, err := wf.Run(ctx, run.TextInput("go"), agent.WithUserID("u"))
	if err != nil || out.Status != run.StatusPaused || len(out.StepRequirements) != 1 || !out.StepRequirements[0].RequiresExecutorInput {
		t.Fatalf("run %s %v %+v", out.Status, err, out.StepRequirements)
	}
	if id := out.StepRequirements[0].StepID; id != "0.0.i0.0.0" {
		t.Errorf("step id %s", id)
	}
	final, err := wf.ContinueRun(ctx, out.RunID, confirmAll(out.StepRequirements, true))
	if err != nil || final.Status != run.StatusCompleted || executed.Load() != 1 || b.Load() != 1 {
		t.Fatalf("final %s %v executed %d b %d", final.Status, err, executed.Load(), b.Load())
	}
	if !strings.Contains(run.ContentText(final.Content), "deleted it") {
		t.Errorf("content %v", final.Content)
	}
}

func TestExecutorPause_RejectedToolIsReportedAndTheWorkflowGoesOn(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var executed atomic.Int32
	wf := mustNew(t, Config{ID: "rej", DB: d, Steps: []Step{{Name: "cleaner", Runner: confirmAgent(t, "cleaner", d, &executed)}}})
	out, err := wf.Run(context.Background(), run.TextInput("go"))
	if err != nil || out.Status != run.StatusPaused {
		t.Fatal(out.Status, err)
	}
	final, err := wf.ContinueRun(context.Background(), out.RunID, confirmAll(out.StepRequirements, false))
	if err != nil || final.Status != run.StatusCompleted || executed.Load() != 0 {
		t.Fatalf("final %s %v executed %d", final.Status, err, executed.Load())
	}
}

func TestExecutorPause_ATeamStepWhoseMemberPausedPausesTheWorkflow(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var executed atomic.Int32
	member := confirmAgent(t, "cleaner", d, &executed)
	tm, err := team.New(team.Config{ID: "crew", DB: d, Members: []*agent.Agent{member}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: team.ToolDelegate, Args: map[string]any{"member_id": "cleaner", "task": "clean"}}}},
		{Content: "team done"},
	}})})
	if err != nil {
		t.Fatal(err)
	}
	wf := mustNew(t, Config{ID: "teamwf", DB: d, Steps: []Step{{Name: "crew", Runner: tm}}})
	out, err := wf.Run(context.Background(), run.TextInput("go"))
	if err != nil || out.Status != run.StatusPaused || len(out.StepRequirements) != 1 {
		t.Fatalf("run %s %v", out.Status, err)
	}
	req := out.StepRequirements[0]
	if req.ExecutorType != "team" || req.ExecutorID != "crew" || len(req.ExecutorRequirements) != 1 {
		t.Fatalf("requirement %+v", req)
	}
	teamRow, err := d.GetRun(context.Background(), req.ExecutorRunID)
	if err != nil || teamRow.Status != run.StatusPaused || teamRow.ParentRunID != out.RunID {
		t.Fatalf("team run %+v %v", teamRow, err)
	}
	final, err := wf.ContinueRun(context.Background(), out.RunID, confirmAll(out.StepRequirements, true))
	if err != nil || final.Status != run.StatusCompleted || final.Content != "team done" || executed.Load() != 1 {
		t.Fatalf("final %s %v %v executed %d", final.Status, final.Content, err, executed.Load())
	}
}

// flaky fails its first n calls.
func flaky(name string, n int32, calls *atomic.Int32) Step {
	return Step{Name: name, Func: func(_ context.Context, in *StepInput) (FuncResult, error) {
		if calls.Add(1) <= n {
			return FuncResult{}, errors.New("the service is down")
		}
		return FuncResult{Content: run.ContentText(in.PreviousStepContent) + ">" + name}, nil
	}, HumanReview: &HumanReview{OnError: OnErrorPause, MaxRetries: 2}}
}

func TestOnErrorPause_AFailingStepWaitsForRetrySkipOrCancel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		decision   string
		status     run.Status
		content    string
		flakyCalls int32
	}{
		{DecisionRetry, run.StatusCompleted, "in>a>f>c", 2},
		{DecisionSkip, run.StatusCompleted, "in>a>c", 1},
		{DecisionCancel, run.StatusCancelled, "", 1},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			t.Parallel()
			var a, f, c atomic.Int32
			r := newRestartable(t)
			d := r.open()
			steps := func() []Step { return []Step{counted("a", &a), flaky("f", 1, &f), counted("c", &c)} }
			wf := mustNew(t, Config{ID: "err", DB: d, Steps: steps()})
			out, err := wf.Run(context.Background(), run.TextInput("in"))
			if err != nil || out.Status != run.StatusPaused || len(out.ErrorRequirements) != 1 || len(out.StepRequirements) != 0 {
				t.Fatalf("run %s %v %+v", out.Status, err, out)
			}
			e := out.ErrorRequirements[0]
			if e.StepID != "1" || e.StepName != "f" || !strings.Contains(e.ErrorMessage, "the service is down") || e.Decision != nil || e.RetryCount != 0 {
				t.Errorf("error requirement %+v", e)
			}
			row, _ := storedRun(t, d, out.RunID)
			if !strings.Contains(string(row.RunData), `"error_requirements":[{`) {
				t.Errorf("run_data lacks error_requirements: %s", row.RunData)
			}
			if _, err := wf.ContinueRun(context.Background(), out.RunID, nil); !errors.Is(err, ErrUnresolved) {
				t.Errorf("continue without a decision: %v", err)
			}
			d.Close()
			d2 := r.open()
			wf2 := mustNew(t, Config{ID: "err", DB: d2, Steps: steps()})
			final, _ := wf2.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{{StepID: e.StepID, Decision: tc.decision}})
			if final == nil || final.Status != tc.status || tc.content != "" && final.Content != tc.content || f.Load() != tc.flakyCalls || a.Load() != 1 {
				t.Fatalf("final %+v; f ran %d a ran %d", final, f.Load(), a.Load())
			}
		})
	}
}

func TestOnErrorPause_RetriesAreBoundedByMaxRetries(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var f atomic.Int32
	wf := mustNew(t, Config{ID: "err", DB: d, Steps: []Step{flaky("f", 100, &f)}})
	out, err := wf.Run(context.Background(), run.TextInput("in"))
	for i := 0; i < 2; i++ {
		if err != nil || out.Status != run.StatusPaused || out.ErrorRequirements[0].RetryCount != i {
			t.Fatalf("pause %d: %s %v %+v", i, out.Status, err, out.ErrorRequirements)
		}
		out, err = wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{{StepID: "0", Confirmed: yes()}})
	}
	if out == nil || out.Status != run.StatusError || f.Load() != 3 {
		t.Fatalf("after 2 retries: %+v %v (f ran %d)", out, err, f.Load())
	}
}

// TestOnErrorPause_IsOnlyForSteps: OnError pause and skip on a primitive
// are refused (skip was accepted and did nothing: a failing step inside a
// Condition with OnError skip still failed the run).
func TestOnErrorPause_IsOnlyForSteps(t *testing.T) {
	t.Parallel()
	for _, onError := range []string{OnErrorPause, OnErrorSkip} {
		for _, s := range []Step{
			{Name: "p", Parallel: &Parallel{Steps: []Step{fn("x")}}},
			{Name: "c", Condition: &Condition{If: "true", Steps: []Step{fn("x")}}},
			{Name: "l", Loop: &Loop{Steps: []Step{fn("x")}}},
		} {
			s.HumanReview = &HumanReview{OnError: onError}
			_, err := New(Config{Steps: []Step{s}})
			if err == nil || !strings.Contains(err.Error(), "OnError "+onError) {
				t.Errorf("%s on %s: err %v", onError, s.Name, err)
			}
		}
	}
	if _, err := New(Config{Steps: []Step{{Name: "c", HumanReview: &HumanReview{OnError: OnErrorFail}, Condition: &Condition{If: "true", Steps: []Step{fn("x")}}}}}); err != nil {
		t.Errorf("OnError fail on a Condition: %v", err)
	}
}

var _ model.Model = (*scripted.Model)(nil)

// TestApprovals_TeamAndStepPauses: a team run that pauses is queued as an
// approval (source_type team) and continuing it resolves it; a step's agent
// run that pauses is covered by its workflow's approval only.
func TestApprovals_TeamAndStepPauses(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var executed atomic.Int32
	member := confirmAgent(t, "cleaner", d, &executed)
	tm, err := team.New(team.Config{ID: "crew", DB: d, Members: []*agent.Agent{member}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: team.ToolDelegate, Args: map[string]any{"member_id": "cleaner", "task": "clean"}}}},
		{Content: "team done"},
	}})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out, err := tm.Run(ctx, run.TextInput("go"), agent.WithUserID("alice"))
	if err != nil || out.Status != run.StatusPaused {
		t.Fatalf("team run %s %v", out.Status, err)
	}
	aps, _, err := d.ListApprovals(ctx, db.ApprovalFilter{RunID: out.RunID, Limit: 10, Page: 1})
	if err != nil || len(aps) != 1 || aps[0].SourceType != "team" || aps[0].TeamID != "crew" || aps[0].Status != db.ApprovalPending ||
		aps[0].ToolName != "delete_file" || aps[0].UserID != "alice" {
		t.Fatalf("team approvals %+v, %v", aps, err)
	}
	// The member's own paused run is not queued twice.
	if all, _, _ := d.ListApprovals(ctx, db.ApprovalFilter{Limit: 10, Page: 1}); len(all) != 1 {
		t.Errorf("%d approvals, want the team run's only", len(all))
	}
	for i := range out.Requirements {
		out.Requirements[i].ToolExecution.Confirmed = yes()
	}
	final, err := tm.ContinueRun(ctx, out)
	if err != nil || final.Status != run.StatusCompleted || executed.Load() != 1 {
		t.Fatalf("continued %s %v", final.Status, err)
	}
	a, err := d.GetApproval(ctx, aps[0].ID)
	if err != nil || a.Status != db.ApprovalApproved || a.RunStatus != string(run.StatusCompleted) {
		t.Errorf("approval after continue %+v, %v", a, err)
	}

	// A workflow step's agent pausing: one approval, the workflow's.
	wf := mustNew(t, Config{ID: "wfap", DB: d, Steps: []Step{{Name: "cleaner", Runner: confirmAgent(t, "cleaner2", d, &executed)}}})
	wout, err := wf.Run(ctx, run.TextInput("go"))
	if err != nil || wout.Status != run.StatusPaused {
		t.Fatal(wout.Status, err)
	}
	wa, _, _ := d.ListApprovals(ctx, db.ApprovalFilter{Status: db.ApprovalPending, Limit: 10, Page: 1})
	if len(wa) != 1 || wa[0].SourceType != "workflow" || wa[0].RunID != wout.RunID {
		t.Errorf("pending approvals %+v", wa)
	}
}
