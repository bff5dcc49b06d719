package eval_test

import (
	"context"
	"iter"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/eval"
	"github.com/agentryhq/agentry/run"
)

// silent is a target whose runs complete with no content.
type silent struct{}

func (silent) Component() run.Component { return run.Component{Type: run.TypeAgent, ID: "silent"} }
func (silent) DB() *db.DB               { return nil }
func (silent) CancelRun(string) bool    { return false }
func (silent) Run(_ context.Context, _ run.Input, _ ...agent.RunOption) (*run.Output, error) {
	return &run.Output{RunID: "r", AgentID: "silent", Status: run.StatusCompleted}, nil
}
func (silent) Stream(context.Context, run.Input, ...agent.RunOption) iter.Seq2[run.Event, error] {
	return func(func(run.Event, error) bool) {}
}

// An accuracy iteration whose target gave no answer is left out, as Agno
// leaves it out ("Failed to generate a valid answer"): the judge was asked
// to score the empty answer, and its score counted.
func TestAccuracy_AnEmptyAnswerIsNotJudged(t *testing.T) {
	t.Parallel()
	var seen []string
	spy := spyModel{Model: judge(`{"accuracy_score": 9, "accuracy_reason": "fine"}`), seen: &seen}
	res, err := (&eval.Accuracy{Target: silent{}, Judge: spy, Input: "6*7?", ExpectedOutput: "42", Iterations: 2}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("result %+v, %v; want the iterations' error (no answer)", res, err)
	}
	if len(seen) != 0 {
		t.Errorf("the judge was asked %d times, want never", len(seen))
	}
}
