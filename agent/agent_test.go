package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
	"gopkg.in/yaml.v3"
)

func TestNew_RejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	m := scripted.Reply("hi")
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"missing model", Config{}, "Model is required"},
		{"duplicate tool names", Config{Model: m, Tools: []tool.Tool{addTool(), addTool()}}, "two tools are named"},
		{"nil tool", Config{Model: m, Tools: []tool.Tool{nil}}, "is nil"},
		{"negative history", Config{Model: m, NumHistoryRuns: -1}, "NumHistoryRuns"},
		{"negative tool limit", Config{Model: m, ToolCallLimit: -1}, "ToolCallLimit"},
		{"invalid schema JSON", Config{Model: m, OutputSchema: json.RawMessage(`{`)}, "OutputSchema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestNew_DefaultsAndID(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, Config{Model: scripted.Reply("x"), Name: "Weather Bot"})
	if a.ID() != "weather-bot" || a.Config().NumHistoryRuns != DefaultNumHistoryRuns {
		t.Fatalf("id %q, history %d", a.ID(), a.Config().NumHistoryRuns)
	}
	b := mustAgent(t, Config{Model: scripted.Reply("x")})
	id := b.ID()
	if id == "" || b.ID() != id {
		t.Fatalf("an agent without name gets a stable random id: %q, then %q", id, b.ID())
	}
	if c := mustAgent(t, Config{Model: scripted.Reply("x")}); c.ID() == id {
		t.Fatalf("two agents without name share the id %q", id)
	}
}

func TestInstructions_DecodeStringOrList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, json string
		want             []string
	}{
		{"string", "i: be brief\n", `{"i":"be brief"}`, []string{"be brief"}},
		{"list", "i: [a, b]\n", `{"i":["a","b"]}`, []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var y, j struct {
				I Instructions `json:"i" yaml:"i"`
			}
			if err := yaml.Unmarshal([]byte(tc.yaml), &y); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.json), &j); err != nil {
				t.Fatal(err)
			}
			if strings.Join(y.I, "|") != strings.Join(tc.want, "|") || strings.Join(j.I, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("yaml %q json %q", y.I, j.I)
			}
		})
	}
}

func TestRun_SingleTurnCompletes(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, Config{Name: "Greeter", Model: script(t, scripted.Turn{Content: "Hello there, friend."}),
		Instructions: Instructions{"Be kind.", "Be brief."}, Description: "You greet people."})
	out, err := a.Run(context.Background(), run.TextInput("hi"), WithUserID("u1"), WithMetadata(map[string]any{"k": "v"}))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != run.StatusCompleted || out.Content != "Hello there, friend." || out.ContentType != "str" {
		t.Fatalf("status %s content %v", out.Status, out.Content)
	}
	if out.RunID == "" || out.SessionID == "" || out.AgentID != "greeter" || out.UserID != "u1" || out.Metadata["k"] != "v" {
		t.Fatalf("identity: %+v", out)
	}
	if out.Metrics == nil || out.Metrics.InputTokens == 0 || out.Metrics.OutputTokens == 0 || out.Metrics.Duration <= 0 || out.Metrics.TimeToFirstToken <= 0 {
		t.Fatalf("metrics: %+v", out.Metrics)
	}
	roles := []model.Role{}
	for _, m := range out.Messages {
		roles = append(roles, m.Role)
	}
	if len(roles) != 3 || roles[0] != model.RoleSystem || roles[1] != model.RoleUser || roles[2] != model.RoleAssistant {
		t.Fatalf("roles %v", roles)
	}
	if sys := out.Messages[0].Content; !strings.Contains(sys, "You greet people.") || !strings.Contains(sys, "<instructions>\n- Be kind.\n- Be brief.\n</instructions>") {
		t.Fatalf("system message %q", sys)
	}
	if out.Model != "scripted" || out.ModelProvider != "Scripted" || out.Input.Text() != "hi" {
		t.Fatalf("model %q/%q input %+v", out.Model, out.ModelProvider, out.Input)
	}
}

func TestRun_UserMessageCarriesMedia(t *testing.T) {
	t.Parallel()
	rec := &recorder{Model: scripted.Reply("a cat")}
	// a model taking image URLs: the agent does not fetch them
	a := mustAgent(t, Config{Model: urlModel{rec}})
	in := run.Input{InputContent: "what is this?", Images: []run.Media{{URL: "https://x/cat.png", MIMEType: "image/png"}},
		Files: []run.Media{{Content: []byte("pdf"), Name: "a.pdf"}}}
	if _, err := a.Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	msgs := rec.requests()[0]
	user := msgs[len(msgs)-1]
	if user.Content != "what is this?" || len(user.Parts) != 2 || user.Parts[0].Type != model.PartImage ||
		user.Parts[0].URL != "https://x/cat.png" || user.Parts[1].Type != model.PartFile || user.Parts[1].Name != "a.pdf" {
		t.Fatalf("user message %+v", user)
	}
}

func TestRun_ToolCallThenAnswer(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, Config{Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "add", Args: map[string]any{"a": 2, "b": 40}}}},
		scripted.Turn{Content: "The sum is 42."},
	), Tools: []tool.Tool{addTool()}})
	out, err := a.Run(context.Background(), run.TextInput("add 2 and 40"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Content != "The sum is 42." || len(out.Tools) != 1 || out.Tools[0].Result != "42" || out.Tools[0].ToolCallError {
		t.Fatalf("content %v tools %+v", out.Content, out.Tools)
	}
	if string(out.Tools[0].ToolArgs) != `{"a":2,"b":40}` || out.Tools[0].Metrics == nil {
		t.Fatalf("tool args %s", out.Tools[0].ToolArgs)
	}
	last := out.Messages[len(out.Messages)-2]
	if last.Role != model.RoleTool || last.Content != "42" || last.ToolCallID != out.Tools[0].ToolCallID || last.ToolName != "add" {
		t.Fatalf("tool message %+v", last)
	}
}

func TestRun_ParallelToolCallsRunConcurrently(t *testing.T) {
	t.Parallel()
	b := newBarrier(2)
	a := mustAgent(t, Config{Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "left"}, {Name: "right"}}},
		scripted.Turn{Content: "both done"},
	), Tools: []tool.Tool{
		funcTool("left", tool.FuncConfig{}, b.arrive),
		funcTool("right", tool.FuncConfig{}, b.arrive),
	}})
	evs := collect(t, a.Stream(context.Background(), run.TextInput("go")))
	out := find(evs, run.EventRunCompleted)
	if out == nil || out.Content != "both done" {
		t.Fatalf("events %v", names(evs))
	}
	if n := count(evs, run.EventToolCallCompleted); n != 2 {
		t.Fatalf("want 2 ToolCallCompleted, got %d (%v)", n, names(evs))
	}
	for _, e := range evs {
		if e.Event == run.EventToolCallCompleted && e.Tool.Result != "met" {
			t.Fatalf("tool result %q", e.Tool.Result)
		}
	}
}

func TestRun_ToolFailuresGoBackToModel(t *testing.T) {
	t.Parallel()
	boom := funcTool("boom", tool.FuncConfig{}, func(context.Context) (string, error) { panic("kaboom") })
	fails := funcTool("fails", tool.FuncConfig{}, func(context.Context) (string, error) { return "", errors.New("disk full") })
	tests := []struct {
		name string
		call scripted.ToolCall
		want string
	}{
		{"malformed arguments", scripted.ToolCall{Name: "add", RawArgs: `{"a": 1, "b":`}, "invalid arguments"},
		{"arguments not matching the schema", scripted.ToolCall{Name: "add", Args: map[string]any{"a": "one", "b": 2}}, "invalid arguments"},
		{"unknown tool", scripted.ToolCall{Name: "nope"}, "unknown tool"},
		{"tool panic", scripted.ToolCall{Name: "boom"}, "panicked"},
		{"tool error", scripted.ToolCall{Name: "fails"}, "disk full"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{Model: script(t,
				scripted.Turn{ToolCalls: []scripted.ToolCall{tc.call}},
				scripted.Turn{Content: "recovered"},
			)}
			a := mustAgent(t, Config{Model: rec, Tools: []tool.Tool{addTool(), boom, fails}})
			evs := collect(t, a.Stream(context.Background(), run.TextInput("x")))
			done := find(evs, run.EventRunCompleted)
			if done == nil || done.Content != "recovered" {
				t.Fatalf("run did not recover: %v", names(evs))
			}
			te := find(evs, run.EventToolCallError)
			if te == nil || !te.Tool.ToolCallError || !strings.Contains(te.Tool.Result, tc.want) {
				t.Fatalf("tool error event %+v", te)
			}
			reqs := rec.requests()
			toolMsg := reqs[1][len(reqs[1])-1]
			if toolMsg.Role != model.RoleTool || !toolMsg.ToolCallError || !strings.Contains(toolMsg.Content, tc.want) {
				t.Fatalf("model did not get the error: %+v", toolMsg)
			}
		})
	}
}

func TestRun_ToolCallLimitStopsLoopingModel(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	counter := funcTool("tick", tool.FuncConfig{}, func(context.Context) (string, error) { calls.Add(1); return "ok", nil })
	// One scripted turn repeated forever: the model never stops asking.
	rec := &recorder{Model: script(t, scripted.Turn{Content: "still going", ToolCalls: []scripted.ToolCall{{Name: "tick"}}})}
	a := mustAgent(t, Config{Model: rec, Tools: []tool.Tool{counter}, ToolCallLimit: 3})
	out, err := a.Run(context.Background(), run.TextInput("loop"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != run.StatusCompleted || calls.Load() != 3 {
		t.Fatalf("status %s, executed %d calls", out.Status, calls.Load())
	}
	if n := len(rec.requests()); n != 4 {
		t.Fatalf("want 4 model requests (3 tool turns + 1 forced answer), got %d", n)
	}
	last := out.Tools[len(out.Tools)-1]
	if !last.ToolCallError || !strings.Contains(last.Result, "tool call limit of 3") {
		t.Fatalf("last tool %+v", last)
	}
	if out.Messages[len(out.Messages)-1].Role != model.RoleTool {
		t.Fatal("every tool call must be answered so the stored conversation stays valid")
	}
}

func TestRun_ToolCallLimitWithinOneTurn(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, Config{Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "add", Args: map[string]any{"a": 1, "b": 1}}, {Name: "add", Args: map[string]any{"a": 2, "b": 2}}}},
		scripted.Turn{Content: "done"},
	), Tools: []tool.Tool{addTool()}, ToolCallLimit: 1})
	out, err := a.Run(context.Background(), run.TextInput("x"))
	if err != nil || out.Content != "done" {
		t.Fatalf("%v %v", out.Content, err)
	}
	if out.Tools[0].Result != "2" || !out.Tools[1].ToolCallError {
		t.Fatalf("tools %+v", out.Tools)
	}
}

func TestRun_StopAfterToolCallEndsRun(t *testing.T) {
	t.Parallel()
	final := funcTool("final", tool.FuncConfig{StopAfterCall: true}, func(context.Context) (string, error) { return "final answer", nil })
	a := mustAgent(t, Config{Model: script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "final"}}}, scripted.Turn{Content: "never"}),
		Tools: []tool.Tool{final}})
	out, err := a.Run(context.Background(), run.TextInput("x"))
	if err != nil || out.Content != "final answer" {
		t.Fatalf("%v %v", out.Content, err)
	}
}

func TestRun_ProviderErrorMidStreamEndsInError(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, Config{Model: script(t, scripted.Turn{Content: "partial", Error: "garbage in stream", ErrorKind: "malformed"})})
	out, err := a.Run(context.Background(), run.TextInput("x"))
	if !errors.Is(err, model.ErrMalformedResponse) {
		t.Fatalf("err = %v", err)
	}
	if out.Status != run.StatusError || !strings.Contains(out.ContentString(), "garbage in stream") {
		t.Fatalf("status %s content %v", out.Status, out.Content)
	}
	evs := collect(t, a.Stream(context.Background(), run.TextInput("x")))
	re := find(evs, run.EventRunError)
	if re == nil || re.ErrorType != "ModelProviderError" || !strings.Contains(re.Content.(string), "garbage") {
		t.Fatalf("RunError %+v (%v)", re, names(evs))
	}
	if find(evs, run.EventRunCompleted) != nil {
		t.Fatal("an errored run must not complete")
	}
}

func TestRun_RateLimitErrorType(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, Config{Model: script(t, scripted.Turn{Error: "slow down", ErrorKind: "rate_limit"})})
	evs := collect(t, a.Stream(context.Background(), run.TextInput("x")))
	if re := find(evs, run.EventRunError); re == nil || re.ErrorType != "ModelRateLimitError" {
		t.Fatalf("events %v", names(evs))
	}
}

func TestStream_CancellationEndsCancelled(t *testing.T) {
	t.Parallel()
	slow, err := scripted.New(scripted.Config{Turns: []scripted.Turn{{Content: "never"}}, Latency: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	a := mustAgent(t, Config{Model: slow})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var evs []run.Event
	for ev, err := range a.Stream(ctx, run.TextInput("x")) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		if ev.Event == run.EventModelRequestStarted {
			cancel()
		}
	}
	c := find(evs, run.EventRunCancelled)
	if c == nil || c.Reason == "" || evs[len(evs)-1].Event != run.EventRunCancelled {
		t.Fatalf("events %v", names(evs))
	}
}

func TestRun_CancelledContextReturnsCancelledRun(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, Config{Model: scripted.Reply("x")})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := a.Run(ctx, run.TextInput("x"))
	if !errors.Is(err, context.Canceled) || out.Status != run.StatusCancelled {
		t.Fatalf("status %v err %v", out.Status, err)
	}
}

func TestCancelRun_CancelsRunInProgress(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	wait := funcTool("wait", tool.FuncConfig{}, func(ctx context.Context) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	a := mustAgent(t, Config{Model: script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "wait"}}}), Tools: []tool.Tool{wait}})
	go func() {
		<-started
		if !a.CancelRun("r1") {
			t.Error("run r1 not found")
		}
	}()
	out, err := a.Run(context.Background(), run.TextInput("x"), WithRunID("r1"))
	if !errors.Is(err, context.Canceled) || out.Status != run.StatusCancelled || !strings.Contains(out.ContentString(), "CancelRun") {
		t.Fatalf("status %s err %v content %v", out.Status, err, out.Content)
	}
	if a.CancelRun("r1") {
		t.Fatal("a finished run must be forgotten")
	}
}

func TestRun_ReasoningModelRunsFirst(t *testing.T) {
	t.Parallel()
	main := &recorder{Model: scripted.Reply("The answer is 4.")}
	reasoner := script(t, scripted.Turn{Reasoning: "two plus two is four", Content: "4"})
	a := mustAgent(t, Config{Model: main, ReasoningModel: reasoner, Instructions: Instructions{"Answer."}})
	evs := collect(t, a.Stream(context.Background(), run.TextInput("2+2?")))
	want := []run.EventType{run.EventRunStarted, run.EventReasoningStarted, run.EventReasoningContentDelta}
	for i, w := range want {
		if evs[i].Event != w {
			t.Fatalf("event %d = %s, want %s (%v)", i, evs[i].Event, w, names(evs))
		}
	}
	step := find(evs, run.EventReasoningStep)
	done := find(evs, run.EventReasoningCompleted)
	if step == nil || step.ReasoningStep.Reasoning != "two plus two is four" || done == nil || len(done.ReasoningSteps) != 1 {
		t.Fatalf("reasoning events %v", names(evs))
	}
	sys := main.requests()[0][0]
	if sys.Role != model.RoleSystem || !strings.Contains(sys.Content, "<reasoning>\ntwo plus two is four\n</reasoning>") {
		t.Fatalf("main model did not get the reasoning: %+v", sys)
	}
	out, err := a.Run(context.Background(), run.TextInput("2+2?"))
	if err != nil || out.ReasoningContent != "two plus two is four" || len(out.ReasoningSteps) != 1 || len(out.ReasoningMessages) != 1 {
		t.Fatalf("output reasoning %q %v", out.ReasoningContent, err)
	}
	if rc := find(evs, run.EventRunCompleted); rc.ReasoningContent == "" || rc.Content != "The answer is 4." {
		t.Fatalf("RunCompleted %+v", rc)
	}
}

type weather struct {
	City string  `json:"city"`
	Temp float64 `json:"temp"`
}

func TestRun_StructuredOutput(t *testing.T) {
	t.Parallel()
	schema, err := OutputSchemaFor[weather]()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		answer  string
		wantErr bool
	}{
		{"valid JSON", `{"city":"Paris","temp":21.5}`, false},
		{"fenced JSON", "```json\n{\"city\":\"Oslo\",\"temp\":3}\n```", false},
		{"not JSON", "It is sunny in Paris.", true},
		{"wrong shape", `{"city":"Paris"}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{Model: script(t, scripted.Turn{Content: tc.answer})}
			var seen *model.ResponseFormat
			a := mustAgent(t, Config{Model: &formatSpy{Model: rec, seen: &seen}, OutputSchema: schema, OutputSchemaName: "Weather"})
			out, err := a.Run(context.Background(), run.TextInput("weather?"))
			if seen == nil || seen.Name != "Weather" {
				t.Fatalf("response format not sent: %+v", seen)
			}
			if tc.wantErr {
				if !errors.Is(err, ErrOutputParse) || out.Status != run.StatusError || !strings.Contains(out.ContentString(), "output schema") {
					t.Fatalf("status %s err %v", out.Status, err)
				}
				return
			}
			if err != nil || out.ContentType != "Weather" {
				t.Fatalf("err %v type %q", err, out.ContentType)
			}
			w, err := DecodeContent[weather](out.Content)
			if err != nil || w.City == "" || w.Temp == 0 {
				t.Fatalf("decoded %+v %v", w, err)
			}
		})
	}
}

type formatSpy struct {
	model.Model
	seen **model.ResponseFormat
}

func (f *formatSpy) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	*f.seen = req.ResponseFormat
	return f.Model.Stream(ctx, req)
}

func TestRun_PerCallOutputSchema(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, Config{Model: scripted.Reply(`{"n": 1}`)})
	out, err := a.Run(context.Background(), run.TextInput("x"), WithOutputSchema(json.RawMessage(`{"type":"object","required":["n"]}`), ""))
	if err != nil || out.Content.(map[string]any)["n"] != 1.0 {
		t.Fatalf("%v %v", out.Content, err)
	}
	if _, err := a.Run(context.Background(), run.TextInput("x"), WithOutputSchema(json.RawMessage(`{"type":12}`), "")); err == nil {
		t.Fatal("an invalid schema must be rejected before the run")
	}
}

func TestRun_DependenciesReachTools(t *testing.T) {
	t.Parallel()
	var got RunContext
	probe := funcTool("probe", tool.FuncConfig{}, func(ctx context.Context) (string, error) {
		got, _ = FromContext(ctx)
		return "ok", nil
	})
	a := mustAgent(t, Config{Model: script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "probe"}}}, scripted.Turn{Content: "x"}),
		Tools: []tool.Tool{probe}})
	out, err := a.Run(context.Background(), run.TextInput("x"), WithDependencies(map[string]any{"db": "yes"}), WithSessionID("s1"))
	if err != nil || got.RunID != out.RunID || got.SessionID != "s1" || got.Dependencies["db"] != "yes" {
		t.Fatalf("run context %+v %v", got, err)
	}
}

func TestRun_ConcurrentRunsShareOneAgent(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, Config{Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "add", Args: map[string]any{"a": 1, "b": 2}}}},
		scripted.Turn{Content: "3"},
	), Tools: []tool.Tool{addTool()}})
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			out, err := a.Run(context.Background(), run.TextInput("x"))
			if err == nil && out.Content != "3" {
				err = errors.New("wrong content")
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestRun_SystemMessageLayout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		want    []string
		wantNot []string
		none    bool
	}{
		{"single instruction", Config{Instructions: Instructions{"Be brief."}}, []string{"Be brief."}, []string{"<instructions>"}, false},
		{"markdown, datetime and expected output", Config{Markdown: true, AddDatetimeToContext: true, ExpectedOutput: "a haiku"},
			[]string{"Use markdown", "The current time is", "<expected_output>\na haiku\n</expected_output>"}, nil, false},
		{"override", Config{SystemMessage: "You are X.", Description: "ignored"}, []string{"You are X."}, []string{"ignored"}, false},
		{"nothing to say", Config{}, nil, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{Model: scripted.Reply("ok")}
			tc.cfg.Model = rec
			if _, err := mustAgent(t, tc.cfg).Run(context.Background(), run.TextInput("x")); err != nil {
				t.Fatal(err)
			}
			first := rec.requests()[0][0]
			if tc.none {
				if first.Role == model.RoleSystem {
					t.Fatalf("unexpected system message %q", first.Content)
				}
				return
			}
			if first.Role != model.RoleSystem {
				t.Fatalf("first message %+v", first)
			}
			for _, w := range tc.want {
				if !strings.Contains(first.Content, w) {
					t.Errorf("system message %q lacks %q", first.Content, w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(first.Content, w) {
					t.Errorf("system message %q has %q", first.Content, w)
				}
			}
		})
	}
}

// place is a named embedding: encoding/json reads it as one nested object.
type place struct {
	City string `json:"city"`
}

type forecast struct {
	place `json:"place"`
	Temp  float64         `json:"temp"`
	Extra json.RawMessage `json:"extra"`
}

// The output schema offers what DecodeContent decodes: a named embedded
// struct is a nested object (jsonschema-go promoted its fields, so the one
// answer that decodes was refused) and a json.RawMessage is any value.
func TestRun_StructuredOutputSchemaFollowsEncodingJSON(t *testing.T) {
	t.Parallel()
	schema, err := OutputSchemaFor[forecast]()
	if err != nil {
		t.Fatal(err)
	}
	answer := `{"place":{"city":"Paris"},"temp":21.5,"extra":{"wind":"light"}}`
	a := mustAgent(t, Config{Model: script(t, scripted.Turn{Content: answer}), OutputSchema: schema})
	out, err := a.Run(context.Background(), run.TextInput("forecast?"))
	if err != nil {
		t.Fatalf("run: %v (schema %s)", err, schema)
	}
	f, err := DecodeContent[forecast](out.Content)
	if err != nil || f.City != "Paris" || f.Temp != 21.5 || string(f.Extra) != `{"wind":"light"}` {
		t.Fatalf("decoded %+v %v", f, err)
	}
}

type strictForecast struct {
	City string `json:"city"`
	Note string `json:"note,omitempty"`
}

// TestRun_StrictOutput: StrictOutput sends the output schema in the form
// OpenAI's strict structured outputs take (every property required, none
// other, the optional ones nullable) with strict set, as Agno's
// strict_output; the answer, null for an optional property, validates and
// decodes; a schema strict mode cannot describe is refused by New.
func TestRun_StrictOutput(t *testing.T) {
	t.Parallel()
	schema, err := OutputSchemaFor[strictForecast]()
	if err != nil {
		t.Fatal(err)
	}
	var seen *model.ResponseFormat
	rec := &recorder{Model: script(t, scripted.Turn{Content: `{"city":"Oslo","note":null}`})}
	a := mustAgent(t, Config{Model: &formatSpy{Model: rec, seen: &seen}, OutputSchema: schema, StrictOutput: true})
	out, err := a.Run(t.Context(), run.TextInput("weather?"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run: %v", err)
	}
	if seen == nil || !seen.Strict {
		t.Fatalf("response format %+v, want strict", seen)
	}
	var sent struct {
		Required             []string                  `json:"required"`
		AdditionalProperties *bool                     `json:"additionalProperties"`
		Properties           map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(seen.Schema, &sent); err != nil {
		t.Fatal(err)
	}
	if strings.Join(sent.Required, ",") != "city,note" || sent.AdditionalProperties == nil || *sent.AdditionalProperties ||
		fmt.Sprint(sent.Properties["note"]["type"]) != "[string null]" {
		t.Errorf("sent schema %s", seen.Schema)
	}
	if f, err := DecodeContent[strictForecast](out.Content); err != nil || f.City != "Oslo" || f.Note != "" {
		t.Errorf("decoded %+v %v", f, err)
	}
	// Without it the schema goes as given.
	seen = nil
	b := mustAgent(t, Config{Model: &formatSpy{Model: scripted.Reply(`{"city":"Oslo"}`), seen: &seen}, OutputSchema: schema})
	if _, err := b.Run(t.Context(), run.TextInput("weather?")); err != nil || seen == nil || seen.Strict || string(seen.Schema) != string(schema) {
		t.Errorf("not strict: %v %+v", err, seen)
	}
	mapSchema, err := OutputSchemaFor[map[string]int]()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Model: scripted.Reply("{}"), OutputSchema: mapSchema, StrictOutput: true}); !errors.Is(err, tool.ErrNotStrict) {
		t.Errorf("map schema: %v, want ErrNotStrict", err)
	}
	if _, err := a.Run(t.Context(), run.TextInput("x"), WithOutputSchema(mapSchema, "")); !errors.Is(err, tool.ErrNotStrict) {
		t.Errorf("per-call map schema: %v, want ErrNotStrict", err)
	}
	// CheckOptions refuses it as Run does, before anything runs; an agent
	// without StrictOutput takes it.
	if err := a.CheckOptions(WithOutputSchema(mapSchema, "")); !errors.Is(err, tool.ErrNotStrict) || !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("CheckOptions, per-call map schema: %v, want ErrNotStrict", err)
	}
	if err := b.CheckOptions(WithOutputSchema(mapSchema, "")); err != nil {
		t.Errorf("CheckOptions, not strict: %v", err)
	}
	if err := a.CheckOptions(WithOutputSchema(json.RawMessage(`{"not":{"$ref":"#"}}`), "")); !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("CheckOptions, schema that cannot end: %v", err)
	}
}
