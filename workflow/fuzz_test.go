package workflow

import (
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/run"
)

// FuzzApplyAnswer: answers from an HTTP form (step_requirements JSON) are
// checked against stored requirements; nothing a client sends panics.
func FuzzApplyAnswer(f *testing.F) {
	f.Add(`[{"step_id":"0","confirmed":true}]`)
	f.Add(`[{"step_id":"1","user_input":{"count":"3","tone":"dry","tags":[1],"meta":{"a":1}}}]`)
	f.Add(`[{"step_id":"2","selected_choices":["a","b","zz"]}]`)
	f.Add(`[{"step_id":"3","confirmed":true,"is_post_execution":true,"edited_output":{"x":[1,2]}}]`)
	f.Add(`[{"step_id":"1","user_input":{"count":1e300}}]`)
	idx := 0
	stored := []run.StepRequirement{
		{StepID: "0", StepIndex: &idx, RequiresConfirmation: true},
		{StepID: "1", RequiresUserInput: true, UserInputSchema: []run.UserInputField{
			{Name: "count", FieldType: "int", Required: true}, {Name: "tone", FieldType: "str", AllowedValues: []any{"dry", 3}},
			{Name: "tags", FieldType: "list"}, {Name: "meta", FieldType: "dict"}, {Name: "ok", FieldType: "bool"}, {Name: "ratio", FieldType: "float"}}},
		{StepID: "2", RequiresRouteSelection: true, AvailableChoices: []string{"a", "b"}},
		{StepID: "3", RequiresOutputReview: true, IsPostExecution: true},
	}
	f.Fuzz(func(t *testing.T, body string) {
		var answers []run.StepRequirement
		if json.Unmarshal([]byte(body), &answers) != nil {
			return
		}
		for _, req := range stored {
			for _, a := range answers {
				if a.StepID == req.StepID {
					_, _ = applyAnswer(req, a)
				}
			}
		}
	})
}

// FuzzExpressions: condition, selector and loop expressions come from
// config files; compiling and evaluating any of them returns an error or a
// value, never a panic, and never runs unbounded.
func FuzzExpressions(f *testing.F) {
	for _, s := range []string{`input.contains("go")`, `"a"`, `["a","b"]`, `session_state.count > 2`, `previous_step_outputs["x"] == "y"`,
		`current_iteration >= 2`, `[1,2,3].map(x, [x, x, x, x]).size() > 0`, `input +`, `step_choices[0]`} {
		f.Add(s)
	}
	in := &StepInput{Input: "go", PreviousStepContent: "p", PreviousStepOutputs: map[string]run.StepOutput{"x": {Content: "y"}}, State: newState(map[string]any{"count": 3})}
	f.Fuzz(func(t *testing.T, src string) {
		if c, err := compileCondition(src); err == nil {
			_, _ = c(in)
		}
		if s, err := compileSelector(src, []string{"a", "b"}); err == nil {
			_, _ = s(in)
		}
		if l, err := compileLoopEnd(src); err == nil {
			_, _ = l(LoopIteration{Iteration: 1, MaxIterations: 3, Outputs: []run.StepOutput{{StepName: "x", Content: "y"}}})
		}
	})
}
