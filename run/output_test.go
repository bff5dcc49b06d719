package run_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// agnoCorpus returns the Agno-shaped run_data files under testdata/agno, by
// file name: agent, team and workflow runs as Agno 2.0, 2.x and 3.0 write
// them (see each file).
func agnoCorpus(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "agno", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus under testdata/agno (%v)", err)
	}
	out := make(map[string][]byte, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// TestOutput_AgnoRunDataRoundTripsLosslessly is the property the runs table
// depends on: reading any run_data Agno wrote and writing it back gives the
// same JSON, and doing it again changes nothing.
func TestOutput_AgnoRunDataRoundTripsLosslessly(t *testing.T) {
	t.Parallel()
	for name, data := range agnoCorpus(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var o run.Output
			if err := json.Unmarshal(data, &o); err != nil {
				t.Fatalf("decode: %v", err)
			}
			first, err := json.Marshal(&o)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if d := jsontest.DiffPython(data, first); d != "" {
				t.Fatalf("decode → encode lost or changed data: %s", d)
			}
			var again run.Output
			if err := json.Unmarshal(first, &again); err != nil {
				t.Fatalf("decode the re-encoded run: %v", err)
			}
			second, err := json.Marshal(&again)
			if err != nil {
				t.Fatal(err)
			}
			if string(first) != string(second) {
				t.Errorf("a second round trip changed the bytes:\n%s\n%s", first, second)
			}
		})
	}
}

// TestOutput_ReadsAgnoShapes checks what Go code sees of Agno's shapes.
func TestOutput_ReadsAgnoShapes(t *testing.T) {
	t.Parallel()
	corpus := agnoCorpus(t)
	decode := func(t *testing.T, name string) *run.Output {
		t.Helper()
		var o run.Output
		if err := json.Unmarshal(corpus[name], &o); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return &o
	}
	tests := []struct {
		name  string
		file  string
		check func(t *testing.T, o *run.Output)
	}{
		{"nested OpenAI tool calls give name and arguments", "agent_v3_tools.json", func(t *testing.T, o *run.Output) {
			want := []model.ToolCall{{ID: "call_Qm3xW0rYz1", Name: "get_weather", Arguments: `{"city": "Paris"}`},
				{ID: "call_Lp8vB2nTq4", Name: "get_weather", Arguments: `{"city": "Tokyo", "units": "metric"}`}}
			got := o.Messages[2].ToolCalls
			if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
				t.Errorf("tool calls = %+v, want %+v", got, want)
			}
		}},
		{"message and tool metrics keep timing", "agent_v3_tools.json", func(t *testing.T, o *run.Output) {
			m := o.Messages[2].Metrics
			if m == nil || m.InputTokens != 212 || m.Duration != 1.0412381999846548 || m.TimeToFirstToken != 0.6120934999966994 {
				t.Errorf("assistant metrics = %+v", m)
			}
			tm := o.Tools[0].Metrics
			if tm == nil || tm.StartTime != 1770801244.112345 || tm.EndTime != 1770801244.1126573 || tm.Duration == 0 {
				t.Errorf("tool metrics = %+v", tm)
			}
			if d := o.Metrics.Details["model"]; o.Metrics.Duration != 2.2290372000041045 || o.Metrics.TotalTokens != 621 || o.Metrics.Cost != 0.0021425 ||
				len(d) != 1 || d[0].ID != "gpt-4o" || d[0].Provider != "OpenAI" || d[0].CacheReadTokens != 128 {
				t.Errorf("run metrics = %+v", o.Metrics)
			}
		}},
		{"tool metrics times stored as ISO strings read as epoch seconds", "agent_v2_provider_quirks.json", func(t *testing.T, o *run.Output) {
			start := float64(time.Date(2025, 10, 9, 8, 53, 21, 104512000, time.UTC).UnixMicro()) / 1e6
			end := float64(time.Date(2025, 10, 9, 8, 53, 21, 524933000, time.UTC).UnixMicro()) / 1e6 // no offset: UTC
			if tm := o.Tools[0].Metrics; tm == nil || tm.StartTime != start || tm.EndTime != end || tm.Duration != 0.42 {
				t.Errorf("tool metrics = %+v, want start %f end %f", tm, start, end)
			}
			if o.Tools[0].CreatedAt != 1760000002 {
				t.Errorf("float created_at = %d", o.Tools[0].CreatedAt)
			}
		}},
		{"workflow run with a plain string input", "workflow_v2_string_input.json", func(t *testing.T, o *run.Output) {
			if o.Input == nil || o.Input.Text() != "Research the latest on solid-state batteries and write a blog post" {
				t.Errorf("input = %+v", o.Input)
			}
			if o.Type() != run.TypeWorkflow || len(o.StepResults) != 3 || o.StepResults[1].StepType != "Parallel" ||
				len(o.StepResults[1].Steps) != 2 || o.StepResults[2].ExecutorName != "Writing Team" || len(o.StepExecutorRuns) != 2 {
				t.Errorf("step results = %+v", o.StepResults)
			}
			if s := o.Metrics.Steps["write"]; s.ExecutorType != "team" || s.Metrics == nil || s.Metrics.TotalTokens != 2200 {
				t.Errorf("workflow metrics steps = %+v", o.Metrics.Steps)
			}
		}},
		{"workflow run with a structured input", "workflow_v3_dict_input_paused.json", func(t *testing.T, o *run.Output) {
			in, ok := o.Input.InputContent.(map[string]any)
			if !ok || in["topic"] != "quarterly OKRs" || !strings.Contains(o.Input.Text(), `"audience":"engineering"`) {
				t.Errorf("input = %#v", o.Input)
			}
			if o.Status != run.StatusPaused || o.StepResults[1].Success == nil || *o.StepResults[1].Success || o.StepResults[1].Error != "wiki API returned 503" {
				t.Errorf("status %s, step results %+v", o.Status, o.StepResults)
			}
		}},
		{"a float created_at reads as whole seconds", "workflow_v2_0_no_input.json", func(t *testing.T, o *run.Output) {
			if o.CreatedAt != 1700000005 || o.Input != nil {
				t.Errorf("created_at = %d, input = %+v", o.CreatedAt, o.Input)
			}
		}},
		{"message media and unmodelled members are kept on the message", "agent_v3_media_reasoning.json", func(t *testing.T, o *run.Output) {
			user := o.Messages[3]
			if user.Extra["images"] == nil || user.Extra["files"] == nil || string(user.Extra["checkpoint_status"]) != `"RUNNING"` {
				t.Errorf("user message extra = %v", keys(user.Extra))
			}
			if o.Status != run.StatusRegenerated || o.Extra["regenerated_from"] == nil || o.Extra["last_checkpoint_at_message_index"] == nil {
				t.Errorf("status %s, extra %v", o.Status, keys(o.Extra))
			}
		}},
		{"input media: base64 images and unencoded text files", "agent_v3_media_reasoning.json", func(t *testing.T, o *run.Output) {
			if len(o.Input.Images) != 2 || len(o.Input.Images[1].Content) != 70 || o.Input.Images[0].URL == "" {
				t.Errorf("images = %+v", o.Input.Images)
			}
			if f := o.Input.Files[0]; string(f.Content) != "quarter,revenue\nQ3,1200\n" {
				t.Errorf("text file content = %q", f.Content)
			}
			if o.Input.Files[1].Extra["media_reference"] == nil {
				t.Errorf("file extra = %v", keys(o.Input.Files[1].Extra))
			}
		}},
		{"structured content and reasoning", "agent_v3_media_reasoning.json", func(t *testing.T, o *run.Output) {
			c, ok := o.Content.(map[string]any)
			if !ok || c["growth_pct"] != 20.0 || o.ContentType != "ChartSummary" {
				t.Errorf("content = %#v", o.Content)
			}
			if len(o.ReasoningSteps) != 2 || o.ReasoningSteps[1].Confidence != 1 || o.ReasoningSteps[1].NextAction != "final_answer" {
				t.Errorf("reasoning steps = %+v", o.ReasoningSteps)
			}
		}},
		{"HITL requirements and paused tools", "agent_v3_paused_hitl.json", func(t *testing.T, o *run.Output) {
			if len(o.Requirements) != 3 || o.Requirements[0].ToolExecution == nil || !o.Requirements[0].ToolExecution.RequiresConfirmation ||
				o.Requirements[0].Extra["created_at"] == nil {
				t.Errorf("requirements = %+v", o.Requirements)
			}
			if !o.Tools[1].RequiresUserInput || o.Tools[1].Answered == nil || *o.Tools[1].Answered || !o.Tools[2].ExternalExecutionRequired {
				t.Errorf("tools = %+v", o.Tools)
			}
			ev := o.Events[1]
			if ev.Event != run.EventRunPaused || len(ev.Tools) != 1 || len(ev.Requirements) != 1 || ev.Extra["nested_depth"] == nil {
				t.Errorf("paused event = %+v", ev)
			}
		}},
		{"provider quirks: signatures, null and object arguments, list content", "agent_v2_provider_quirks.json", func(t *testing.T, o *run.Output) {
			calls := o.Messages[1].ToolCalls
			if calls[0].ThoughtSignature != "CiQBcsjafT0kZ2VtaW5pLXNpZ25hdHVyZQ==" || o.Messages[1].ProviderData["thought_signatures"] == nil {
				t.Errorf("signature %q, provider data %v", calls[0].ThoughtSignature, o.Messages[1].ProviderData)
			}
			if len(calls) != 4 || calls[0].Name != "search_hotels" || calls[0].Arguments != `{"city": "Lisbon", "max_price": 180}` ||
				calls[1].Arguments != "" || calls[2].Arguments != "" || calls[3].Name != "geocode" || calls[3].Arguments != `{"place":"Alfama","zoom":14}` {
				t.Errorf("tool calls = %+v", calls)
			}
			if o.Messages[0].Content != "" || o.Messages[0].Extra["content"] == nil {
				t.Errorf("list content should be kept raw, got %q / %v", o.Messages[0].Content, keys(o.Messages[0].Extra))
			}
		}},
		{"team run with member responses", "team_v3_member_responses.json", func(t *testing.T, o *run.Output) {
			if o.Type() != run.TypeTeam || len(o.MemberResponses) != 2 {
				t.Fatalf("type %s, %d member responses", o.Type(), len(o.MemberResponses))
			}
			var m run.Output
			if err := json.Unmarshal(o.MemberResponses[0], &m); err != nil || m.ParentRunID != o.RunID || m.Messages[1].ToolCalls[0].Name != "duckduckgo_news" {
				t.Errorf("member response = %+v (%v)", m, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t, decode(t, tt.file))
		})
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestOutput_WorkflowEmptyDictInputStaysAnObject: a workflow run Agno
// stored with the input {} (an empty dict) is written back with {}, not
// with null, which Agno's WorkflowRunOutput reads as no input.
func TestOutput_WorkflowEmptyDictInputStaysAnObject(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"run_id":"r","workflow_id":"w","input":{},"status":"COMPLETED"}`,
		`{"run_id":"r","workflow_id":"w","input": { } }`,
		`{"run_id":"r","agent_id":"a","input":{}}`,
	} {
		var o run.Output
		if err := json.Unmarshal([]byte(in), &o); err != nil {
			t.Fatalf("decode %s: %v", in, err)
		}
		got, err := json.Marshal(&o)
		if err != nil {
			t.Fatal(err)
		}
		if d := jsontest.DiffPython([]byte(in), got); d != "" {
			t.Errorf("%s → %s: %s", in, got, d)
		}
	}
}
