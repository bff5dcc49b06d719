package run_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// diffPlain checks the reflection-free encoder against encoding/json for o:
// where it writes o, the bytes are the same; where encoding/json refuses o,
// it does not write it. It reports whether it wrote o.
func diffPlain(t *testing.T, name string, o *run.Output) bool {
	t.Helper()
	want, werr := run.EncodeReflect(o)
	got, ok := run.EncodePlain(o)
	switch {
	case ok && werr != nil:
		t.Fatalf("%s: encoding/json refuses the run (%v), the plain encoder wrote %s", name, werr, got)
	case ok && !bytes.Equal(got, want):
		t.Fatalf("%s: bytes differ\nplain   %s\nreflect %s", name, got, want)
	}
	if ok {
		// And MarshalJSON, which picks the plain encoder, writes them too.
		if b, err := o.MarshalJSON(); err != nil || !bytes.Equal(b, want) {
			t.Fatalf("%s: MarshalJSON wrote %s (%v), want %s", name, b, err, want)
		}
	}
	return ok
}

// plainCases are runs the plain encoder writes, with the values its
// encoding must get exactly right.
func plainCases() map[string]*run.Output {
	tiny, huge := 2.81e-7, 1.5e21
	cases := map[string]*run.Output{
		"empty":                   {},
		"empty content and input": {AgentID: "a", Content: "", Input: &run.Input{InputContent: ""}},
		"nil input content":       {AgentID: "a", Input: &run.Input{}},
		"html, controls, invalid UTF-8, separators": {AgentID: "a<&>", Content: "<b>a&b</b>\"q\" \\ \b\f\n\r\t\x00\x1f\x7f \xff\xfe é 日本 \u2028\u2029 \U0001F600",
			Messages: []model.Message{{Role: "user\x01", Content: "bad \xc3\x28 utf8 \xed\xa0\x80 surrogate"}}},
		"floats": {AgentID: "a", Metrics: &run.Metrics{Usage: model.Usage{Cost: 1e-7, InputTokens: -3}, Duration: tiny, TimeToFirstToken: huge,
			StartTime: 1.7e9 + 0.123456789, EndTime: -1e-6},
			Messages: []model.Message{{Role: "assistant", Metrics: &model.MessageMetrics{Usage: model.Usage{Duration: 1e20, TimeToFirstToken: 123456789012345678901.0, Cost: math.SmallestNonzeroFloat64}}}}},
		"float boundaries":         {AgentID: "a", Metrics: &run.Metrics{Duration: 1e21, TimeToFirstToken: 1e-6, StartTime: 9.99999999999e20, EndTime: 9.9e-7}},
		"negative zero is omitted": {AgentID: "a", Metrics: &run.Metrics{Duration: math.Copysign(0, -1)}},
		"details of one model": {AgentID: "a", Metrics: &run.Metrics{Details: map[string][]run.ModelMetrics{"model": {{}, {ID: "m", Provider: "p",
			Usage: model.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3, CacheReadTokens: 4, CacheWriteTokens: 5, ReasoningTokens: 6, Cost: 0.5, Duration: 1.5, TimeToFirstToken: 0.25}}}}}},
		"empty details map": {AgentID: "a", Metrics: &run.Metrics{Details: map[string][]run.ModelMetrics{}}},
		"message fields": {AgentID: "a", Messages: []model.Message{{ID: "m1", Role: model.RoleTool, Content: "c", ToolCallID: "call_1", ToolName: "t",
			ToolArgs: json.RawMessage(" {\"a\" : [1, 2.50, \"<x>\"] }\n"), ToolCallError: true, ReasoningContent: "r", FromHistory: true,
			Metrics: &model.MessageMetrics{}, CreatedAt: -5}}},
		"every string field": {RunID: "r", AgentID: "a", AgentName: "an", TeamID: "t", TeamName: "tn", WorkflowID: "w", WorkflowName: "wn",
			SessionID: "s", ParentRunID: "p", WorkflowStepID: "ws", UserID: "u", ContentType: "str", Model: "m", ModelProvider: "mp", ReasoningContent: "rc",
			PausedStepName: "ps", PauseKind: "step", Status: run.StatusPaused, CreatedAt: 1, UpdatedAt: math.MaxInt64},
		"team run input": {TeamID: "t", Input: &run.Input{InputContent: "hi"}},
	}
	for i, o := range conversationRuns() {
		cases["conversation run "+string(rune('a'+i))] = o
	}
	return cases
}

func TestAppendPlainOutput_SameBytes(t *testing.T) {
	for name, o := range plainCases() {
		if !diffPlain(t, name, o) {
			t.Errorf("%s: not written by the plain encoder", name)
		}
	}
	// Runs it must leave to encoding/json (and so stay identical).
	nan := math.NaN()
	for name, o := range map[string]*run.Output{
		"NaN":                         {AgentID: "a", Metrics: &run.Metrics{Duration: nan}},
		"infinity in message metrics": {AgentID: "a", Messages: []model.Message{{Metrics: &model.MessageMetrics{Usage: model.Usage{Cost: math.Inf(1)}}}}},
		"invalid tool args":           {AgentID: "a", Messages: []model.Message{{ToolArgs: json.RawMessage(`{"a":`)}}},
		"structured content":          {AgentID: "a", Content: map[string]any{"x": 1}},
		"workflow input":              {WorkflowID: "w", Input: &run.Input{InputContent: "x"}},
		"steps":                       {WorkflowID: "w", Metrics: &run.Metrics{Steps: map[string]run.StepMetrics{}}},
		"other details":               {AgentID: "a", Metrics: &run.Metrics{Details: map[string][]run.ModelMetrics{"reasoning_model": {{ID: "m"}}}}},
		"tool calls":                  {AgentID: "a", Messages: []model.Message{{Role: "assistant", ToolCalls: []model.ToolCall{{ID: "c", Name: "n", Arguments: "{}"}}}}},
		"tools":                       {AgentID: "a", Tools: []run.ToolExecution{{ToolName: "t"}}},
		"extra":                       {AgentID: "a", Extra: map[string]json.RawMessage{"x": json.RawMessage(`1`)}},
		"message extra":               {AgentID: "a", Messages: []model.Message{{Extra: map[string]json.RawMessage{"x": json.RawMessage(`1`)}}}},
		"metadata":                    {AgentID: "a", Metadata: map[string]any{"k": "v"}},
	} {
		if diffPlain(t, name, o) {
			t.Errorf("%s: written by the plain encoder", name)
		}
	}
}

// TestAppendPlainOutput_Corpus: every stored run of the corpus, decoded,
// and the runs of this package's benchmarks encode the same both ways.
func TestAppendPlainOutput_Corpus(t *testing.T) {
	for name, data := range agnoCorpus(t) {
		var o run.Output
		if err := json.Unmarshal(data, &o); err != nil {
			t.Fatal(err)
		}
		diffPlain(t, name, &o)
		// The same run with what the plain encoder cannot write dropped.
		plain := o
		plain.Extra, plain.Tools, plain.Events, plain.Requirements, plain.ReasoningMessages = nil, nil, nil, nil, nil
		plain.Messages = nil
		for _, m := range o.Messages {
			if m.Extra == nil && len(m.ToolCalls)+len(m.Parts)+len(m.Thinking)+len(m.ProviderData) == 0 && (m.Metrics == nil || m.Metrics.Extra == nil) {
				plain.Messages = append(plain.Messages, m)
			}
		}
		diffPlain(t, name+" (plain part)", &plain)
	}
	if !diffPlain(t, "agentryRun without tools", func() *run.Output {
		o := agentryRun()
		o.Tools = nil
		o.Messages = o.Messages[:2]
		return o
	}()) {
		t.Error("agentryRun without tools: not written by the plain encoder")
	}
}

// FuzzAppendPlainOutput compares the plain encoder with encoding/json on
// runs built from fuzzed strings and numbers, and on fuzzed run_data.
func FuzzAppendPlainOutput(f *testing.F) {
	for _, b := range agnoCorpus(f) {
		f.Add(b, "x", "<&>", 0.5, int64(1), []byte(`{"a":1}`))
	}
	for _, o := range plainCases() {
		b, err := run.EncodeReflect(o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "\xff\u2028\"", "\n\t\\", 2.81e-7, int64(-7), []byte(" [1, 2] "))
	}
	f.Fuzz(func(t *testing.T, data []byte, s1, s2 string, x float64, n int64, args []byte) {
		var o run.Output
		if json.Unmarshal(data, &o) == nil {
			diffPlain(t, "decoded", &o)
		}
		o = run.Output{RunID: s1, AgentID: s2, Content: s1 + s2, ContentType: s2, Status: run.Status(s1), CreatedAt: n,
			Input:   &run.Input{InputContent: s2},
			Metrics: &run.Metrics{Usage: model.Usage{InputTokens: int(n), Cost: x}, Duration: x, StartTime: -x, EndTime: x * 1e15},
			Messages: []model.Message{
				{Role: model.Role(s1), Content: s2, CreatedAt: n},
				{Role: "tool", ToolName: s1, ToolArgs: args, Metrics: &model.MessageMetrics{Usage: model.Usage{Duration: x / 1e9, TimeToFirstToken: x}}},
			}}
		if n%2 == 0 {
			o.Metrics.Details = map[string][]run.ModelMetrics{"model": {{ID: s1, Provider: s2, Usage: model.Usage{TotalTokens: int(n), Duration: x}}}}
		}
		diffPlain(t, "built", &o)
	})
}

// TestAppendPlainOutput_KnowsEveryField fails when a type the plain encoder
// writes gains a field: appendPlainOutput must then write it, or plainOutput
// refuse runs that set it, or the field would not be stored.
func TestAppendPlainOutput_KnowsEveryField(t *testing.T) {
	for _, c := range []struct {
		v      any
		fields string
	}{
		{run.Output{}, "RunID AgentID AgentName TeamID TeamName WorkflowID WorkflowName SessionID ParentRunID WorkflowStepID UserID Input Content ContentType " +
			"Model ModelProvider Messages Tools Metrics ReasoningContent ReasoningSteps ReasoningMessages Images Videos Audio Files ResponseAudio " +
			"Citations References Metadata SessionState Events Requirements MemberResponses StepResults StepExecutorRuns StepRequirements " +
			"PausedStepIndex PausedStepName PauseKind ErrorRequirements Status CreatedAt UpdatedAt Extra"},
		{run.Input{}, "InputContent Images Videos Audio Files Extra bare rawBare emptyObject"}, // emptyObject: workflow runs only, which plainOutput refuses
		{run.Metrics{}, "Usage Duration TimeToFirstToken StartTime EndTime Details Steps Extra"},
		{run.ModelMetrics{}, "ID Provider Usage Extra"},
		{model.Usage{}, "InputTokens OutputTokens TotalTokens CacheReadTokens CacheWriteTokens ReasoningTokens Cost Duration TimeToFirstToken"},
		{model.MessageMetrics{}, "Usage Extra"},
		{model.Message{}, "ID Role Content Parts ToolCalls ToolCallID ToolName ToolArgs ToolCallError ReasoningContent Thinking ProviderData " +
			"FromHistory Metrics CreatedAt Extra"},
	} {
		typ := reflect.TypeOf(c.v)
		var names []string
		for i := range typ.NumField() {
			names = append(names, typ.Field(i).Name)
		}
		if got := strings.Join(names, " "); got != c.fields {
			t.Errorf("%s has fields\n%s\nappendPlainOutput knows\n%s", typ, got, c.fields)
		}
	}
}

// TestAppendPlainOutput_Concurrent: runs encoded at once through the pooled
// scratch buffers each get their own bytes (run with -race).
func TestAppendPlainOutput_Concurrent(t *testing.T) {
	runs := conversationRuns()
	want := make([][]byte, len(runs))
	for i, o := range runs {
		b, err := run.EncodeReflect(o)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = b
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(runs))
	held := make([][][]byte, len(runs))
	for i, o := range runs {
		wg.Go(func() {
			for range 50 {
				b, err := o.MarshalJSON()
				if err != nil || !bytes.Equal(b, want[i]) {
					errs <- fmt.Sprintf("run %d: got %s (%v)", i, b, err)
					return
				}
				held[i] = append(held[i], b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for i := range held { // no later encoding wrote into bytes returned
		for _, b := range held[i] {
			if !bytes.Equal(b, want[i]) {
				t.Fatalf("run %d: bytes changed after return: %s", i, b)
			}
		}
	}
	for e := range errs {
		t.Error(e)
	}
}
