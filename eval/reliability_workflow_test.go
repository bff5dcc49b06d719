package eval_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/eval"
	"github.com/agentryhq/agentry/workflow"
)

// A workflow's run records no tool calls (its steps' runs do): a
// reliability eval of one reported every expected tool missing, though the
// step's agent called it, and passed any forbidden one. It is refused
// before the workflow runs.
func TestReliability_AWorkflowIsRefused(t *testing.T) {
	t.Parallel()
	flow, err := workflow.New(workflow.Config{ID: "flow", Name: "Flow", Steps: []workflow.Step{{Name: "calc", Runner: calculator(t, nil)}}})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*eval.Reliability{
		"expected":  {Target: flow, Input: "6*7?", ExpectedToolCalls: []string{"multiply"}},
		"forbidden": {Target: flow, Input: "6*7?", ForbiddenToolCalls: []string{"multiply"}},
	} {
		if res, err := r.Run(context.Background()); !errors.Is(err, eval.ErrInvalid) {
			t.Errorf("%s: %+v, %v; want ErrInvalid", name, res, err)
		}
	}
}
