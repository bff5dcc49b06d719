package eval_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/eval"
)

// Running one eval value again is a new evaluation with a row of its own:
// the first run's generated run_id was kept, so the second run did all its
// work and then failed to store it (the run_id was taken).
func TestEvals_RunningAgainStoresANewRow(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	ctx := context.Background()
	acc := &eval.Accuracy{Record: eval.Record{DB: d}, Target: calculator(t, d), Judge: judge(`{"accuracy_score": 9, "accuracy_reason": "ok"}`),
		Input: "6*7?", ExpectedOutput: "42"}
	rl := &eval.Reliability{Record: eval.Record{DB: d}, Target: calculator(t, d), Input: "6*7?", ExpectedToolCalls: []string{"multiply"}}
	perf := &eval.Performance{Record: eval.Record{DB: d}, Func: func(context.Context) error { return nil }, Iterations: 2, NoMemory: true}
	aj := &eval.AgentAsJudge{Record: eval.Record{DB: d}, Judge: judge(`{"passed": true, "reason": "ok"}`), Outputs: []string{"x"}, Criteria: "c"}
	runs := map[string]func() (string, error){
		"accuracy": func() (string, error) {
			r, err := acc.Run(ctx)
			return rowID(r, err, acc.RunID, func(r *eval.AccuracyResult) eval.Outcome { return r.Outcome })
		},
		"reliability": func() (string, error) {
			r, err := rl.Run(ctx)
			return rowID(r, err, rl.RunID, func(r *eval.ReliabilityResult) eval.Outcome { return r.Outcome })
		},
		"performance": func() (string, error) {
			r, err := perf.Run(ctx)
			return rowID(r, err, perf.RunID, func(r *eval.PerformanceResult) eval.Outcome { return r.Outcome })
		},
		"agent_as_judge": func() (string, error) {
			r, err := aj.Run(ctx)
			return rowID(r, err, aj.RunID, func(r *eval.AgentAsJudgeResult) eval.Outcome { return r.Outcome })
		},
	}
	for name, runOnce := range runs {
		first, err := runOnce()
		if err != nil {
			t.Fatalf("%s: first run: %v", name, err)
		}
		second, err := runOnce()
		if err != nil || second == first {
			t.Errorf("%s: second run: row %q (first %q), %v; want a row of its own", name, second, first, err)
		}
		for _, id := range []string{first, second} {
			if _, err := d.GetEvalRun(ctx, id); err != nil {
				t.Errorf("%s: row %q: %v", name, id, err)
			}
		}
	}
}

// rowID is the id of the row a Run stored, which its RunID must name.
func rowID[T any](r *T, err error, runID string, outcome func(*T) eval.Outcome) (string, error) {
	if err != nil || r == nil {
		return "", err
	}
	row := outcome(r).Row
	if row == nil || row.RunID != runID {
		return "", fmt.Errorf("stored row %+v, RunID %q", row, runID)
	}
	return row.RunID, nil
}
