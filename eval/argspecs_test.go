package eval_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/eval"
	"github.com/agentryhq/agentry/run"
)

// Agno's list form of expected_tool_call_arguments ({"add": [{...}, {...}]},
// each spec matched by some clean call) was refused by the JSON and YAML
// decoders; an object (one spec) still works, and eval_input keeps the form.
func TestReliability_ArgumentSpecsAsAList(t *testing.T) {
	t.Parallel()
	out := &run.Output{AgentID: "calc", Tools: []run.ToolExecution{
		{ToolCallID: "1", ToolName: "add", ToolArgs: json.RawMessage(`{"a":1,"b":2}`)},
		{ToolCallID: "2", ToolName: "add", ToolArgs: json.RawMessage(`{"a":3,"b":4}`)},
	}}
	for body, want := range map[string]string{
		`{"add": [{"a": 1}, {"a": 3, "b": 4}]}`: "PASSED",
		`{"add": [{"a": 1}, {"a": 5}]}`:         "FAILED", // the second spec matches no call
		`{"add": [{"a": 1, "b": 4}]}`:           "FAILED", // one call must have both
		`{"add": {"b": 2}}`:                     "PASSED",
		`{"add": []}`:                           "PASSED",
	} {
		var specs map[string]eval.ArgumentSpecs
		if err := json.Unmarshal([]byte(body), &specs); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		res, err := (&eval.Reliability{Output: out, ExpectedToolCalls: []string{"add"}, ExpectedToolCallArguments: specs}).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.EvalStatus != want {
			t.Errorf("%s: %s (passed %v, failed %v), want %s", body, res.EvalStatus, res.PassedArgumentChecks, res.FailedArgumentChecks, want)
		}
		var input struct {
			Args json.RawMessage `json:"expected_tool_call_arguments"`
		}
		if err := json.Unmarshal(res.Row.EvalInput, &input); err != nil {
			t.Fatal(err)
		}
		var again map[string]eval.ArgumentSpecs
		if err := json.Unmarshal(input.Args, &again); err != nil || len(again["add"]) != len(specs["add"]) {
			t.Errorf("%s: eval_input holds %s", body, input.Args)
		}
	}
	for _, bad := range []string{`{"add": 3}`, `{"add": [3]}`, `{"add": "x"}`, `{"add": null}`, `{"add": [{"a": 1}, null]}`} {
		var specs map[string]eval.ArgumentSpecs
		if err := json.Unmarshal([]byte(bad), &specs); err == nil {
			t.Errorf("%s decoded as %v, want an error", bad, specs)
		}
	}
	s, err := eval.ParseSuite([]byte("cases:\n  - {name: c, type: reliability, agent: a, input: hi, expected_tool_calls: [add], expected_tool_call_arguments: {add: [{a: 1}, {a: 3}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Cases[0].ExpectedToolCallArguments["add"]; len(got) != 2 || got[1]["a"] != 3 {
		t.Errorf("YAML list form = %v", got)
	}
	for _, bad := range []string{"3", "~", "[{a: 1}, ~]"} {
		if _, err := eval.ParseSuite([]byte("cases:\n  - {name: c, type: reliability, agent: a, input: hi, expected_tool_call_arguments: {add: " + bad + "}}\n")); err == nil {
			t.Errorf("argument specs %s were accepted", bad)
		}
	}
}
