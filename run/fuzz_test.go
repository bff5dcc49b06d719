package run_test

import (
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/run"
)

// FuzzOutputDecode: any bytes decode without a panic; what decodes encodes,
// and decoding that again is stable (encode → decode → encode gives the same
// JSON), so a run read and re-saved any number of times does not drift.
func FuzzOutputDecode(f *testing.F) {
	for _, b := range agnoCorpus(f) {
		f.Add(b)
	}
	for _, s := range []string{
		`{}`, `null`, `{"input":"x","workflow_id":"w"}`, `{"input":{"topic":1},"agent_id":"a"}`,
		`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","name":"n","arguments":{"a":[1]}}]}]}`,
		`{"metrics":{"start_time":"2025-01-02T03:04:05Z","end_time":"7.5","input_tokens":1e2}}`,
		`{"images":[{"content":"not base64!"}],"created_at":1.5e9,"status":7}`,
		`{"Run_ID":"x","run_id":"y","messages":[null,{"role":null}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var o run.Output
		if json.Unmarshal(data, &o) != nil {
			return
		}
		first, err := json.Marshal(&o)
		if err != nil {
			t.Fatalf("decoded but does not encode: %v\ninput %q", err, data)
		}
		var again run.Output
		if err := json.Unmarshal(first, &again); err != nil {
			t.Fatalf("re-encoded run does not decode: %v\n%s", err, first)
		}
		second, err := json.Marshal(&again)
		if err != nil {
			t.Fatal(err)
		}
		if d := jsontest.Diff(first, second); d != "" {
			t.Fatalf("unstable round trip: %s\nfirst  %s\nsecond %s", d, first, second)
		}
	})
}

// FuzzContinueAnswersDecode: the run types a continue request decodes from
// a client's JSON (tools, requirements, step_requirements), and the stored
// workflow pause types, decode any bytes without a panic; what decodes
// encodes, and decoding that again is stable.
func FuzzContinueAnswersDecode(f *testing.F) {
	for _, s := range []string{
		`[{"tool_call_id":"c","tool_name":"t","tool_args":{"a":1},"confirmed":true,"metrics":{"start_time":"2025-01-02T03:04:05Z"}}]`,
		`[{"id":"r","tool_execution":{"tool_call_id":"c","requires_user_input":true,"user_input_schema":[{"name":"n","value":2.0}],"answered":true}}]`,
		`[{"step_id":"s","requires_user_input":true,"user_input":{"n":2.0,"s":"\udcff"},"user_input_schema":[{"name":"n","field_type":"float","value":null,"allowed_values":[1.0]}],"step_output":{"content":{"x":1e16}},"max_retries":null,"confirmed":null}]`,
		`[{"step_id":"s","error_message":"boom","retry_count":1.0,"decision":null,"step_name":null}]`,
		`[null,{},[],"x",1]`,
	} {
		for kind := range byte(4) {
			f.Add(kind, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, kind byte, data []byte) {
		var v any
		switch kind % 4 {
		case 0:
			v = new([]run.ToolExecution)
		case 1:
			v = new([]run.Requirement)
		case 2:
			v = new([]run.StepRequirement)
		default:
			v = new([]run.ErrorRequirement)
		}
		if json.Unmarshal(data, v) != nil {
			return
		}
		first, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("decoded but does not encode: %v\ninput %q", err, data)
		}
		if err := json.Unmarshal(first, v); err != nil {
			t.Fatalf("re-encoded value does not decode: %v\n%s", err, first)
		}
		second, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if d := jsontest.DiffPython(first, second); d != "" {
			t.Fatalf("unstable round trip: %s\nfirst  %s\nsecond %s", d, first, second)
		}
	})
}
