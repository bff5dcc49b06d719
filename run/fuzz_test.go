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
