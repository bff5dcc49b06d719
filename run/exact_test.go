package run

import (
	"encoding/json"
	"strings"
	"testing"
)

// A workflow step's user input, edited output, input field values and step
// content read from a stored run keep an integer beyond 2^53 exact (it was
// read as float64, 9007199254740993 becoming …992), and are written back in
// their stored form, floats written as 2.0 included, as Agno reads them.
func TestStepValuesKeepNumbersExact(t *testing.T) {
	const big = "9007199254740993"
	req := `{"step_id":"s1","requires_confirmation":false,"confirmed":null,"requires_user_input":true,` +
		`"user_input_schema":[{"name":"id","field_type":"int","value":` + big + `,"required":true,"allowed_values":[` + big + `,1.5]}],` +
		`"user_input":{"id":` + big + `,"ratio":2.0,"nested":[` + big + `]},"requires_route_selection":false,` +
		`"allow_multiple_selections":false,"selected_choices":null,"requires_output_review":false,"is_post_execution":false,` +
		`"edited_output":{"n":` + big + `},"retry_count":0,"max_retries":null,"timeout_at":""}`
	var r StepRequirement
	if err := json.Unmarshal([]byte(req), &r); err != nil {
		t.Fatal(err)
	}
	if got := r.UserInput["id"]; got != json.Number(big) {
		t.Fatalf("user_input id = %v (%T), want %s exactly", got, got, big)
	}
	if got := r.UserInput["nested"].([]any)[0]; got != json.Number(big) {
		t.Fatalf("nested = %v (%T), want %s exactly", got, got, big)
	}
	if got := r.UserInput["ratio"]; got != 2.0 {
		t.Fatalf("ratio = %v (%T), want float64 2", got, got)
	}
	if got := r.EditedOutput.(map[string]any)["n"]; got != json.Number(big) {
		t.Fatalf("edited_output n = %v (%T), want %s exactly", got, got, big)
	}
	f := r.UserInputSchema[0]
	if f.Value != json.Number(big) || f.AllowedValues[0] != json.Number(big) {
		t.Fatalf("field value %v (%T), allowed %v, want %s exactly", f.Value, f.Value, f.AllowedValues, big)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"user_input":{"id":` + big + `,"ratio":2.0,`, `"value":` + big, `"allowed_values":[` + big + `,1.5]`, `"edited_output":{"n":` + big + `}`} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("written back without %s:\n%s", want, b)
		}
	}
	// An answer set since is written as it is now, exactly.
	r.UserInput = map[string]any{"id": json.Number("9007199254740995")}
	if b, err = json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"user_input":{"id":9007199254740995}`) {
		t.Fatalf("a changed answer was not written as set:\n%s", b)
	}

	var s StepOutput
	if err := json.Unmarshal([]byte(`{"step_name":"a","content":{"id":`+big+`,"x":1.0}}`), &s); err != nil {
		t.Fatal(err)
	}
	if got := s.Content.(map[string]any)["id"]; got != json.Number(big) {
		t.Fatalf("step content id = %v (%T), want %s exactly", got, got, big)
	}
	if b, err = json.Marshal(s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"content":{"id":`+big+`,"x":1.0}`) {
		t.Fatalf("step content written back changed:\n%s", b)
	}
}

// A run's content, metadata, session state and input, and a stored event's
// content, keep an integer beyond 2^53 exact too, and a workflow's bare
// input; each is written back as stored.
func TestRunValuesKeepNumbersExact(t *testing.T) {
	const big = "9007199254740993"
	data := `{"run_id":"r","workflow_id":"w","content":{"id":` + big + `,"f":2.0},"metadata":{"id":` + big + `},` +
		`"session_state":{"id":` + big + `},"input":{"order":` + big + `,"f":3.0},"status":"COMPLETED",` +
		`"events":[{"event":"WorkflowCompleted","content":{"id":` + big + `},"session_state":{"id":` + big + `}}]}`
	var o Output
	if err := json.Unmarshal([]byte(data), &o); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]any{
		"content":             o.Content.(map[string]any)["id"],
		"metadata":            o.Metadata["id"],
		"session_state":       o.SessionState["id"],
		"input":               o.Input.InputContent.(map[string]any)["order"],
		"event content":       o.Events[0].Content.(map[string]any)["id"],
		"event session_state": o.Events[0].SessionState["id"],
	} {
		if got != json.Number(big) {
			t.Errorf("%s id = %v (%T), want %s exactly", name, got, got, big)
		}
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"content":{"id":` + big + `,"f":2.0}`, `"metadata":{"id":` + big + `}`,
		`"input":{"order":` + big + `,"f":3.0}`, `"session_state":{"id":` + big + `}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("written back without %s:\n%s", want, b)
		}
	}
	var in Input
	if err := json.Unmarshal([]byte(`{"input_content":{"id":`+big+`,"f":1.0}}`), &in); err != nil {
		t.Fatal(err)
	}
	if got := in.InputContent.(map[string]any)["id"]; got != json.Number(big) {
		t.Errorf("input_content id = %v (%T), want %s exactly", got, got, big)
	}
	if b, err = json.Marshal(in); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"input_content":{"id":`+big+`,"f":1.0}`) {
		t.Errorf("input written back changed:\n%s", b)
	}
}
