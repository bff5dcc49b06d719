package workflow

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
)

// A workflow that is a step of another and pauses (for a person, here)
// cannot be continued by its parent, whose run fails at that step: the
// nested run stayed PAUSED, its approval pending, so that someone could
// still approve and continue it after the run it belonged to had ended.
// It ends CANCELLED, and its approval with it.
func TestStep_ANestedWorkflowThatPausesIsNotLeftPaused(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		name := "run"
		if streamed {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := newRestartable(t).open()
			ctx := context.Background()
			inner := mustNew(t, Config{ID: "inner", DB: d, Steps: []Step{{Name: "ask", HumanReview: &HumanReview{RequiresConfirmation: true},
				Func: func(context.Context, *StepInput) (FuncResult, error) { return FuncResult{Content: "x"}, nil }}}})
			outer := mustNew(t, Config{ID: "outer", DB: d, Steps: []Step{fn("a"), {Runner: inner}, fn("c")}})
			opts := []agent.RunOption{agent.WithSessionID("s"), agent.WithUserID("u")}
			if streamed {
				evs := collect(t, outer, "in", opts...)
				if last := evs[len(evs)-1]; last.Event != run.EventWorkflowError {
					t.Fatalf("the outer run's last event %s", last.Event)
				}
			} else if out, err := outer.Run(ctx, run.TextInput("in"), opts...); err == nil || out.Status != run.StatusError {
				t.Fatalf("outer run %v, %v; want ERROR at the nested workflow's pause", out.Status, err)
			}
			rows, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: "s", WorkflowID: "inner", Limit: 10, Page: 1})
			if err != nil || len(rows) != 1 {
				t.Fatalf("the nested run's rows %d, %v", len(rows), err)
			}
			if rows[0].Status != run.StatusCancelled {
				t.Errorf("the nested run is %s, want CANCELLED", rows[0].Status)
			}
			list, _, err := d.ListApprovals(ctx, db.ApprovalFilter{RunID: rows[0].RunID, Limit: 10, Page: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range list {
				if a.Status == db.ApprovalPending {
					t.Errorf("the nested run's approval %s is still pending", a.ID)
				}
			}
			stored, err := rows[0].Output()
			if err != nil {
				t.Fatal(err)
			}
			var answers []run.StepRequirement
			for _, r := range stored.StepRequirements {
				answers = append(answers, answer(r, yes()))
			}
			answers = append(answers, run.StepRequirement{StepID: "0", StepName: "ask", Confirmed: yes()})
			if _, err := inner.ContinueRun(ctx, rows[0].RunID, answers, opts...); !errors.Is(err, ErrNotPaused) {
				t.Errorf("continuing the nested run after its parent run ended: %v, want ErrNotPaused", err)
			}
		})
	}
}

// A nested workflow that paused because its agent (or team) step paused
// for a tool confirmation ends CANCELLED with its parent's failed step; the
// agent run it waited on (the team's, and its member's) stayed PAUSED, its
// requirement open, so that it could still be continued, and its tool run,
// after the run it belonged to had ended. They end CANCELLED too.
func TestStep_ANestedWorkflowsPausedAgentRunEndsWithIt(t *testing.T) {
	t.Parallel()
	for _, viaTeam := range []bool{false, true} {
		d := newRestartable(t).open()
		ctx := context.Background()
		var executed atomic.Int32
		var step agent.Runner = confirmAgent(t, "cleaner", d, &executed)
		if viaTeam {
			tm, err := team.New(team.Config{ID: "crew", DB: d, Members: []*agent.Agent{step.(*agent.Agent)}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{{Name: team.ToolDelegate, Args: map[string]any{"member_id": "cleaner", "task": "clean"}}}},
				{Content: "team done"},
			}})})
			if err != nil {
				t.Fatal(err)
			}
			step = tm
		}
		inner := mustNew(t, Config{ID: "inner", DB: d, Steps: []Step{{Name: "cleaner", Runner: step}}})
		outer := mustNew(t, Config{ID: "outer", DB: d, Steps: []Step{fn("a"), {Runner: inner}, fn("c")}})
		opts := []agent.RunOption{agent.WithSessionID("s"), agent.WithUserID("u")}
		if out, err := outer.Run(ctx, run.TextInput("in"), opts...); err == nil || out.Status != run.StatusError {
			t.Fatalf("team %v: outer run %v, %v; want ERROR at the nested workflow's pause", viaTeam, out.Status, err)
		}
		filters := []db.RunFilter{{SessionID: "s", AgentID: "cleaner", Limit: 10, Page: 1}}
		if viaTeam {
			filters = append(filters, db.RunFilter{SessionID: "s", TeamID: "crew", Limit: 10, Page: 1})
		}
		for _, f := range filters {
			rows, _, err := d.GetRuns(ctx, f)
			if err != nil || len(rows) != 1 {
				t.Fatalf("team %v: rows of %+v: %d, %v", viaTeam, f, len(rows), err)
			}
			if rows[0].Status != run.StatusCancelled {
				t.Errorf("team %v: the nested workflow's run %s (agent %q team %q) is %s, want CANCELLED", viaTeam, rows[0].RunID, rows[0].AgentID, rows[0].TeamID, rows[0].Status)
			}
			stored, err := rows[0].Output()
			if err != nil {
				t.Fatal(err)
			}
			if len(stored.Requirements) != 0 {
				t.Errorf("team %v: the cancelled run %s keeps its requirements %+v", viaTeam, rows[0].RunID, stored.Requirements)
			}
			list, _, err := d.ListApprovals(ctx, db.ApprovalFilter{RunID: rows[0].RunID, Limit: 10, Page: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range list {
				if a.Status == db.ApprovalPending {
					t.Errorf("team %v: the run's approval %s is still pending", viaTeam, a.ID)
				}
			}
			if f.AgentID == "" {
				continue
			}
			reqs := slices.Clone(stored.Requirements)
			for i := range reqs {
				if reqs[i].ToolExecution != nil {
					te := *reqs[i].ToolExecution
					te.Confirmed = yes()
					reqs[i].ToolExecution = &te
				}
			}
			if _, err := confirmAgent(t, "cleaner", d, &executed).ContinueRunID(ctx, rows[0].RunID, agent.WithRequirements(reqs)); !errors.Is(err, run.ErrNotContinuable) {
				t.Errorf("team %v: continuing the agent run after the run it belonged to ended: %v, want ErrNotContinuable", viaTeam, err)
			}
		}
		if executed.Load() != 0 {
			t.Errorf("team %v: the tool ran %d times", viaTeam, executed.Load())
		}
	}
}
