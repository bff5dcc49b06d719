package workflow

import (
	"context"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
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
