package eval_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/eval"
)

// A judge reads the verdict its kind asks for (accuracy_score, score or
// passed) and nothing else, as Agno's response models do (pydantic ignores
// members it does not declare): a member of another kind next to it, of
// whatever type or value, or an object before it holding another kind's
// member, must not cost the iteration its judgement.
func TestJudges_ReadOnlyTheVerdictTheirKindAsksFor(t *testing.T) {
	t.Parallel()
	for answer, want := range map[string]int{
		`{"accuracy_score": 8, "accuracy_reason": "ok", "passed": "yes"}`:                   8,
		`{"accuracy_score": 7, "accuracy_reason": "ok", "score": 0}`:                        7,
		`Scale: {"score": "1-10"}. Verdict: {"accuracy_score": 6, "accuracy_reason": "ok"}`: 6,
	} {
		acc := &eval.Accuracy{Target: calculator(t, nil), Judge: judge(answer), Input: "6*7?", ExpectedOutput: "42"}
		res, err := acc.Run(context.Background())
		if err != nil || len(res.Results) != 1 || res.Results[0].Score != want {
			t.Errorf("accuracy judge %q: %+v, %v; want score %d", answer, res, err, want)
		}
	}
	for answer, want := range map[string]bool{
		`{"passed": true, "reason": "polite", "score": 0}`:                        true,
		`{"passed": false, "reason": "rude", "accuracy_score": "n/a"}`:            false,
		`Format: {"score": "1-10"}. Answer: {"passed": true, "reason": "polite"}`: true,
	} {
		j := &eval.AgentAsJudge{Outputs: []string{"hello"}, Criteria: "polite", Judge: judge(answer)}
		res, err := j.Run(context.Background())
		if err != nil || len(res.Results) != 1 || res.Results[0].Passed != want || res.Results[0].Score != nil {
			t.Errorf("binary judge %q: %+v, %v; want passed %v", answer, res, err, want)
		}
	}
	for answer, want := range map[string]int{
		`{"score": 9, "reason": "clear", "passed": "n/a"}`:                    9,
		`{"score": 8, "reason": "clear", "accuracy_score": 42}`:               8,
		`Example: {"passed": "maybe"}. Mine: {"score": 5, "reason": "so-so"}`: 5,
	} {
		j := &eval.AgentAsJudge{Outputs: []string{"hello"}, Criteria: "clear", Scoring: eval.ScoringNumeric, Judge: judge(answer)}
		res, err := j.Run(context.Background())
		if err != nil || len(res.Results) != 1 || res.Results[0].Score == nil || *res.Results[0].Score != want {
			t.Errorf("numeric judge %q: %+v, %v; want score %d", answer, res, err, want)
		}
	}
	// The kind's own member is still checked.
	for _, answer := range []string{`{"accuracy_score": 11, "accuracy_reason": "x", "score": 5}`, `{"score": 8, "reason": "x"}`} {
		acc := &eval.Accuracy{Target: calculator(t, nil), Judge: judge(answer), Input: "6*7?", ExpectedOutput: "42"}
		if res, err := acc.Run(context.Background()); err == nil {
			t.Errorf("accuracy judge %q accepted: %+v", answer, res)
		}
	}
}

// An agent-as-judge row names the judge's model in model_id and
// model_provider, as Agno's does ("Use evaluator's model"): the evaluated
// component is in agent_id, and a row of outputs (no target) has a model too.
func TestAgentAsJudge_RowNamesTheJudgesModel(t *testing.T) {
	t.Parallel()
	for name, j := range map[string]*eval.AgentAsJudge{
		"target":  {Target: calculator(t, nil), Input: "6*7?", Criteria: "states the number", Judge: judge(`{"passed": true, "reason": "ok"}`)},
		"outputs": {Outputs: []string{"42"}, Criteria: "states the number", Judge: judge(`{"passed": true, "reason": "ok"}`)},
	} {
		res, err := j.Run(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Row.ModelID != "judge" || res.Row.ModelProvider != "Scripted" {
			t.Errorf("%s: model_id %q, model_provider %q; want the judge's (judge, Scripted)", name, res.Row.ModelID, res.Row.ModelProvider)
		}
		if name == "target" && (res.Row.AgentID != "calc" || res.Row.EvaluatedComponentName != "Calculator") {
			t.Errorf("target: agent_id %q, evaluated_component_name %q", res.Row.AgentID, res.Row.EvaluatedComponentName)
		}
	}
}

// A binary judge's passed written as a string ("true", "no") is read as
// Agno's BinaryJudgeResponse reads it (pydantic's lax bool), as a score
// written "8" is; anything else is still ErrJudge.
func TestAgentAsJudge_PassedAsAString(t *testing.T) {
	t.Parallel()
	for answer, want := range map[string]bool{
		`{"passed": "true", "reason": "ok"}`:  true,
		`{"passed": "False", "reason": "no"}`: false,
		`{"passed": "yes", "reason": "ok"}`:   true,
		`{"passed": 0, "reason": "no"}`:       false,
	} {
		j := &eval.AgentAsJudge{Outputs: []string{"hello"}, Criteria: "polite", Judge: judge(answer)}
		res, err := j.Run(context.Background())
		if err != nil || res.Results[0].Passed != want {
			t.Errorf("%s: %+v, %v; want passed %v", answer, res, err, want)
		}
	}
	for _, answer := range []string{`{"passed": "maybe", "reason": "?"}`, `{"passed": 2, "reason": "?"}`} {
		j := &eval.AgentAsJudge{Outputs: []string{"hello"}, Criteria: "polite", Judge: judge(answer)}
		if res, err := j.Run(context.Background()); err == nil {
			t.Errorf("%s accepted: %+v", answer, res)
		}
	}
}
