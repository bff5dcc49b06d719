package run_test

import (
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

func sameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	if d := jsontest.Diff([]byte(want), got); d != "" {
		t.Errorf("%s\ngot %s", d, got)
	}
}

func usage(in, out int) model.Usage {
	return model.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
}

// A team run's share is its own tokens and every member run's, nested
// teams' members included, summed per model as Agno's session metrics are.
func TestRunShare_CountsMembersRecursively(t *testing.T) {
	own := &run.Metrics{Usage: usage(10, 2), Duration: 3,
		Details: map[string][]run.ModelMetrics{"model": {{ID: "gpt", Provider: "OpenAI", Usage: usage(10, 2)}}}}
	member := `{"run_id":"m1","metrics":{"input_tokens":5,"output_tokens":1,"total_tokens":6,"duration":1,
		"details":{"model":[{"id":"gpt","provider":"OpenAI","input_tokens":5,"output_tokens":1,"total_tokens":6}]}}}`
	nested := `{"run_id":"t2","metrics":{"input_tokens":7,"total_tokens":7,
		"details":{"model":[{"id":"claude","provider":"Anthropic","input_tokens":7,"total_tokens":7}]}},
		"member_responses":[{"run_id":"m3","metrics":{"input_tokens":1,"output_tokens":1,"total_tokens":2,"cost":0.5}}]}`
	got := run.RunShare(own, []json.RawMessage{json.RawMessage(member), json.RawMessage(nested), json.RawMessage(`not json`)})
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, b, `{"input_tokens":23,"output_tokens":4,"total_tokens":27,"cost":0.5,"details":{"model":[
		{"id":"gpt","provider":"OpenAI","input_tokens":15,"output_tokens":3,"total_tokens":18},
		{"id":"claude","provider":"Anthropic","input_tokens":7,"total_tokens":7}]}}`)
}

// Adding to stored metrics keeps what they hold that Agentry does not model
// (Agno's audio tokens, additional_metrics, a model's provider_metrics).
func TestAddSessionMetrics_KeepsWhatItDoesNotModel(t *testing.T) {
	stored := `{"input_tokens":100,"total_tokens":100,"audio_input_tokens":4,
		"additional_metrics":{"x":1},"details":{"model":[{"id":"gpt","provider":"OpenAI","input_tokens":100,
		"total_tokens":100,"provider_metrics":{"p":2}}]}}`
	add := run.RunShare(&run.Metrics{Usage: usage(10, 5),
		Details: map[string][]run.ModelMetrics{
			"model":        {{ID: "gpt", Provider: "OpenAI", Usage: usage(8, 5)}},
			"memory_model": {{ID: "mini", Provider: "OpenAI", Usage: usage(2, 0)}},
		}}, nil)
	got, err := run.AddSessionMetrics(json.RawMessage(stored), &add)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, got, `{"input_tokens":110,"output_tokens":5,"total_tokens":115,"audio_input_tokens":4,
		"additional_metrics":{"x":1},"details":{
			"model":[{"id":"gpt","provider":"OpenAI","input_tokens":108,"output_tokens":5,"total_tokens":113,"provider_metrics":{"p":2}}],
			"memory_model":[{"id":"mini","provider":"OpenAI","input_tokens":2,"total_tokens":2}]}}`)
}

// Missing or null stored metrics start from zero; no token to add still
// gives an object, {} at least, as Agno writes.
func TestAddSessionMetrics_FromNothing(t *testing.T) {
	var zero run.SessionMetrics
	for _, stored := range []string{``, `null`, ` null `, `{}`} {
		got, err := run.AddSessionMetrics(json.RawMessage(stored), &zero)
		if err != nil {
			t.Fatalf("%q: %v", stored, err)
		}
		sameJSON(t, got, `{}`)
	}
}

// Stored metrics that are not an object are refused: the caller leaves
// them as they are rather than writing over them.
func TestAddSessionMetrics_RefusesWhatIsNotAnObject(t *testing.T) {
	add := run.RunShare(&run.Metrics{Usage: usage(1, 1)}, nil)
	for _, stored := range []string{`[1]`, `"lots"`, `7`, `{`} {
		if got, err := run.AddSessionMetrics(json.RawMessage(stored), &add); err == nil {
			t.Errorf("%s: got %s, want an error", stored, got)
		}
	}
}

// Since takes away what a session counted of a run's earlier leg: the
// session gets only what the run added since.
func TestSessionMetrics_SinceLeavesWhatARunAddedSince(t *testing.T) {
	before := run.RunShare(&run.Metrics{Usage: usage(10, 2),
		Details: map[string][]run.ModelMetrics{"model": {{ID: "gpt", Provider: "OpenAI", Usage: usage(10, 2)}}}}, nil)
	now := run.RunShare(&run.Metrics{Usage: usage(25, 6),
		Details: map[string][]run.ModelMetrics{"model": {{ID: "gpt", Provider: "OpenAI", Usage: usage(25, 6)}}}}, nil)
	d := now.Since(&before)
	b, _ := json.Marshal(d)
	sameJSON(t, b, `{"input_tokens":15,"output_tokens":4,"total_tokens":19,"details":{"model":[
		{"id":"gpt","provider":"OpenAI","input_tokens":15,"output_tokens":4,"total_tokens":19}]}}`)
	if b, _ := json.Marshal(now); string(b) == "" || now.InputTokens != 25 || now.Details["model"][0].InputTokens != 25 {
		t.Errorf("Since changed the original: %s", b)
	}
	d = d.Since(&d)
	if !(d.Usage == model.Usage{}) {
		t.Errorf("x - x = %+v", d.Usage)
	}
	if whole := now.Since(nil); whole.InputTokens != 25 {
		t.Errorf("since nothing = %+v", whole.Usage)
	}
}

func FuzzAddSessionMetrics(f *testing.F) {
	f.Add([]byte(`{"input_tokens":1,"details":{"model":[{"id":"a","provider":"b","input_tokens":1}]}}`))
	f.Add([]byte(`{"details":{"model":{}}}`))
	f.Add([]byte(`{"input_tokens":"x","cost":1e308}`))
	f.Add([]byte(`[]`))
	add := run.RunShare(&run.Metrics{Usage: usage(3, 4),
		Details: map[string][]run.ModelMetrics{"model": {{ID: "a", Provider: "b", Usage: usage(3, 4)}}}}, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := run.AddSessionMetrics(data, &add)
		if err != nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("invalid JSON %q from %q", got, data)
		}
	})
}

// BenchmarkAddSessionMetrics is the per-turn cost of adding a run's share
// to a session's stored metrics (one model listed, as a conversation has).
func BenchmarkAddSessionMetrics(b *testing.B) {
	share := run.RunShare(&run.Metrics{Usage: usage(120, 30),
		Details: map[string][]run.ModelMetrics{"model": {{ID: "gpt-4o", Provider: "OpenAI", Usage: usage(120, 30)}}}}, nil)
	stored, err := run.AddSessionMetrics(nil, &share)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := run.AddSessionMetrics(stored, &share); err != nil {
			b.Fatal(err)
		}
	}
}

// A workflow run's share is its steps' metrics summed, as Agno's
// workflow adds them to its session.
func TestRunShare_WorkflowCountsItsSteps(t *testing.T) {
	var m run.Metrics
	if err := json.Unmarshal([]byte(`{"duration":2.5,"steps":{
		"research":{"step_name":"research","executor_type":"agent","executor_name":"r","metrics":{"input_tokens":10,"output_tokens":4,"total_tokens":14,
			"details":{"model":[{"id":"gpt","provider":"OpenAI","input_tokens":10,"output_tokens":4,"total_tokens":14}]}}},
		"write":{"step_name":"write","executor_type":"team","executor_name":"w","metrics":{"input_tokens":5,"output_tokens":1,"total_tokens":6,"cost":0.25,
			"details":{"model":[{"id":"gpt","provider":"OpenAI","input_tokens":5,"output_tokens":1,"total_tokens":6}]}}},
		"format":{"step_name":"format","executor_type":"function","executor_name":"f","metrics":null}}}`), &m); err != nil {
		t.Fatal(err)
	}
	got := run.RunShare(&m, nil)
	b, _ := json.Marshal(got)
	sameJSON(t, b, `{"input_tokens":15,"output_tokens":5,"total_tokens":20,"cost":0.25,"details":{"model":[
		{"id":"gpt","provider":"OpenAI","input_tokens":15,"output_tokens":5,"total_tokens":20}]}}`)
}
