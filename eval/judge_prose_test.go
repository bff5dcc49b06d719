package eval_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/eval"
)

// A judge that ignores the response format writes prose around its JSON:
// braces in that prose, before or after the object, or text after a
// ```json fence, cost the iteration its score ("invalid character after
// top-level value"). The first object holding a verdict is read; an answer
// without one is still ErrJudge.
func TestAccuracy_JudgeAnswerWithProseAround(t *testing.T) {
	t.Parallel()
	for answer, want := range map[string]int{
		`{"accuracy_score": 8, "accuracy_reason": "ok"} Hope this helps :}`:                      8,
		`I weighed {a} against {b}. {"accuracy_score": 7, "accuracy_reason": "ok"}`:              7,
		"```json\n{\"accuracy_score\": 9, \"accuracy_reason\": \"ok\"}\n```\nNote: see {x}.":     9,
		`Scale {"min": 1, "max": 10}; verdict {"accuracy_score": 6, "accuracy_reason": "ok"}`:    6,
		`{"verdict": {"accuracy_score": 5, "accuracy_reason": "nested"}}`:                        5,
		`{"accuracy_score": 4, "accuracy_reason": "a {brace} and a } in the reason"} and more }`: 4,
		`no verdict here {"min": 1}`:                        0,
		`{"accuracy_score": 8, "accuracy_reason": "cut off`: 0,
		`{{{{`: 0,
	} {
		acc := &eval.Accuracy{Target: calculator(t, nil), Judge: judge(answer), Input: "6*7?", ExpectedOutput: "42"}
		res, err := acc.Run(context.Background())
		switch {
		case want == 0 && !errors.Is(err, eval.ErrJudge):
			t.Errorf("judge %q: %+v, err = %v, want ErrJudge", answer, res, err)
		case want != 0 && (err != nil || res.Results[0].Score != want):
			t.Errorf("judge %q: %+v, %v; want score %d", answer, res, err, want)
		}
	}
	j := &eval.AgentAsJudge{Outputs: []string{"x"}, Criteria: "c", Judge: judge(`Checking {criteria}: {"passed": true, "reason": "polite"} }`)}
	if res, err := j.Run(context.Background()); err != nil || !res.Results[0].Passed {
		t.Errorf("binary judge with prose: %+v, %v", res, err)
	}
}
