package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// formats records the response format of every request.
type formats struct {
	model.Model
	mu  sync.Mutex
	got []*model.ResponseFormat
}

func (f *formats) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	f.mu.Lock()
	f.got = append(f.got, req.ResponseFormat)
	f.mu.Unlock()
	return f.Model.Stream(ctx, req)
}

const citySchema = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`

func TestInputSchema_ValidatesStructuredInput(t *testing.T) {
	t.Parallel()
	rec := &recorder{Model: scripted.Reply("ok")}
	a := mustAgent(t, Config{Model: rec, InputSchema: json.RawMessage(citySchema)})
	out, err := a.Run(t.Context(), run.TextInput(`{"city":"Paris","days":2}`))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("valid input: %v", err)
	}
	if _, err := a.Run(t.Context(), run.Input{InputContent: map[string]any{"city": "Oslo"}}); err != nil {
		t.Fatalf("structured input: %v", err)
	}
	for _, bad := range []string{`{"days":2}`, `{"city":3}`, `not json`, `{"city":"x"} trailing`} {
		out, err := a.Run(t.Context(), run.TextInput(bad))
		var ice *InputCheckError
		if !errors.As(err, &ice) || ice.Trigger != TriggerValidationFailed || out.Status != run.StatusError {
			t.Fatalf("input %q: err %v", bad, err)
		}
	}
	if n := len(rec.requests()); n != 2 {
		t.Fatalf("model asked %d times, want 2 (invalid inputs never reach it)", n)
	}
	if _, err := New(Config{Model: rec, InputSchema: json.RawMessage(`{"type":`)}); err == nil {
		t.Fatal("New accepted a broken input schema")
	}
}

func TestParserModel_TurnsFreeTextIntoTheOutputSchema(t *testing.T) {
	t.Parallel()
	main := &formats{Model: scripted.Reply("It is Paris, for three days.")}
	parser := &formats{Model: scripted.MustNew(scripted.Config{ID: "parser", Turns: []scripted.Turn{{Content: `{"city":"Paris","days":3}`}}})}
	a := mustAgent(t, Config{Model: main, ParserModel: parser, OutputSchema: json.RawMessage(citySchema), StoreEvents: true})
	out, err := a.Run(t.Context(), run.TextInput("plan"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := out.Content.(map[string]any)
	if got["city"] != "Paris" || got["days"] != float64(3) {
		t.Fatalf("content %#v", out.Content)
	}
	if main.got[0] != nil {
		t.Fatal("the main model was given the schema")
	}
	if len(parser.got) != 1 || parser.got[0] == nil || string(parser.got[0].Schema) != citySchema {
		t.Fatalf("parser formats %+v", parser.got)
	}
	if d := out.Metrics.Details["parser_model"]; len(d) != 1 || d[0].ID != "parser" {
		t.Fatalf("metrics details %+v", out.Metrics.Details)
	}
	if find(out.Events, run.EventParserModelResponseStarted) == nil || find(out.Events, run.EventParserModelResponseCompleted) == nil {
		t.Fatalf("events %v", names(out.Events))
	}
}

func TestOutputModel_WritesTheFinalAnswer(t *testing.T) {
	t.Parallel()
	main := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 2, "b": 3}}}},
		{Content: "draft: 5"},
	}})
	writer := &recorder{Model: scripted.MustNew(scripted.Config{ID: "writer", Turns: []scripted.Turn{{Content: "The sum is five."}}})}
	a := mustAgent(t, Config{Model: main, OutputModel: writer, OutputModelPrompt: "Write the answer politely.", Tools: []tool.Tool{addTool()}})
	evs := collect(t, a.Stream(t.Context(), run.TextInput("2+3?")))
	done := find(evs, run.EventRunCompleted)
	if done == nil || done.Content != "The sum is five." {
		t.Fatalf("events %v", names(evs))
	}
	var final, inter strings.Builder
	for _, e := range evs {
		switch e.Event {
		case run.EventRunContent:
			final.WriteString(e.Content.(string))
		case run.EventRunIntermediateContent:
			inter.WriteString(e.Content.(string))
		}
	}
	if final.String() != "The sum is five." || inter.String() != "draft: 5" {
		t.Fatalf("RunContent %q, RunIntermediateContent %q", final.String(), inter.String())
	}
	reqs := writer.requests()
	if len(reqs) != 1 {
		t.Fatalf("writer asked %d times", len(reqs))
	}
	msgs := reqs[0]
	if msgs[0].Role != model.RoleSystem || msgs[0].Content != "Write the answer politely." {
		t.Fatalf("writer system message %+v", msgs[0])
	}
	last := msgs[len(msgs)-1]
	if last.Role != model.RoleTool || last.Content != "5" {
		t.Fatalf("writer's last message %+v (the main model's answer must be left out, the tool result kept)", last)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Event == run.EventOutputModelResponseStarted && evs[i-1].Event != run.EventModelRequestCompleted {
			t.Fatalf("OutputModelResponseStarted after %s", evs[i-1].Event)
		}
	}
	if find(evs, run.EventOutputModelResponseCompleted) == nil {
		t.Fatal("no OutputModelResponseCompleted")
	}
}

func TestToolHooks_WrapEveryCallOutermostFirst(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var trail []string
	mark := func(name string) ToolHook {
		return func(next ToolHandler) ToolHandler {
			return func(ctx context.Context, call model.ToolCall) tool.Result {
				mu.Lock()
				trail = append(trail, name+">"+call.Name)
				mu.Unlock()
				r := next(ctx, call)
				mu.Lock()
				trail = append(trail, name+"<"+r.Content)
				mu.Unlock()
				return r
			}
		}
	}
	deny := func(next ToolHandler) ToolHandler {
		return func(ctx context.Context, call model.ToolCall) tool.Result {
			if rc, _ := FromContext(ctx); rc.UserID != "admin" {
				return tool.Result{Call: call, Content: "not allowed for " + rc.UserID, Err: errors.New("denied")}
			}
			return next(ctx, call)
		}
	}
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 1, "b": 1}}}}, {Content: "done"},
	}})
	a := mustAgent(t, Config{Model: m, Tools: []tool.Tool{addTool()}, ToolHooks: []ToolHook{mark("outer"), mark("inner"), deny}})
	out, err := a.Run(t.Context(), run.TextInput("x"), WithUserID("admin"))
	if err != nil {
		t.Fatal(err)
	}
	if ex := out.Tools[0]; ex.ToolCallError || ex.Result != "2" {
		t.Fatalf("admin's call %+v", ex)
	}
	if want := []string{"outer>add", "inner>add", "inner<2", "outer<2"}; !slices.Equal(trail, want) {
		t.Fatalf("trail %v, want %v", trail, want)
	}
	out, err = a.Run(t.Context(), run.TextInput("x"), WithUserID("bob"))
	if err != nil {
		t.Fatal(err)
	}
	if ex := out.Tools[0]; !ex.ToolCallError || ex.Result != "not allowed for bob" {
		t.Fatalf("denied call %+v", ex)
	}
}

func TestLogToolCalls_LogsNameAndOutcome(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	var mu sync.Mutex
	l := slogTo(&buf, &mu)
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 1, "b": 1}}, {Name: "missing"}}}, {Content: "done"},
	}})
	a := mustAgent(t, Config{Model: m, Tools: []tool.Tool{addTool()}, ToolHooks: []ToolHook{LogToolCalls(l)}})
	if _, err := a.Run(t.Context(), run.TextInput("x")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	s := buf.String()
	mu.Unlock()
	if !strings.Contains(s, "level=INFO msg=\"agent: tool call\" tool=add") || !strings.Contains(s, "level=WARN msg=\"agent: tool call failed\" tool=missing") {
		t.Fatalf("log:\n%s", s)
	}
}

func TestCacheResults_ServesRepeatCallsFromTheCache(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	counter := tool.MustFunc(tool.FuncConfig{Name: "lookup", Description: "Looks up."},
		func(_ context.Context, in map[string]any) (string, error) {
			calls.Add(1)
			if in["fail"] == true {
				return "", errors.New("lookup failed")
			}
			return "result", nil
		})
	turn := func(args string) scripted.Turn {
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "lookup", RawArgs: args}}}
	}
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		turn(`{"q":"go","n":1}`), turn(`{"n":1, "q":"go"}`), turn(`{"q":"rust"}`), turn(`{"fail":true}`), turn(`{"fail":true}`), {Content: "done"},
	}})
	a := mustAgent(t, Config{Model: m, Tools: []tool.Tool{counter}, CacheResults: true})
	out, err := a.Run(t.Context(), run.TextInput("x"), WithUserID("u1"))
	if err != nil {
		t.Fatal(err)
	}
	// go (cached for the reordered repeat), rust, and both failures.
	if n := calls.Load(); n != 4 {
		t.Fatalf("tool ran %d times, want 4", n)
	}
	if out.Tools[1].Result != "result" || out.Tools[1].ToolCallError {
		t.Fatalf("cached call %+v", out.Tools[1])
	}
	if _, err := a.Run(t.Context(), run.TextInput("x"), WithUserID("u1")); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 6 {
		t.Fatalf("second run of the same user: tool ran %d times in all, want 6 (only the failures again)", n)
	}
	if _, err := a.Run(t.Context(), run.TextInput("x"), WithUserID("u2")); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 10 {
		t.Fatalf("another user: tool ran %d times in all, want 10 (nothing shared across users)", n)
	}
}

func TestToolCache_ExpiresAndStaysBounded(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	c := newToolCache(time.Minute, 2)
	c.now = func() time.Time { return now }
	var runs int
	h := c.wrap(func(_ context.Context, call model.ToolCall) tool.Result {
		runs++
		return tool.Result{Call: call, Content: call.Arguments}
	})
	call := func(args string) { h(t.Context(), model.ToolCall{Name: "t", Arguments: args}) }
	call(`1`)
	call(`1`)
	if runs != 1 {
		t.Fatalf("runs %d, want 1", runs)
	}
	now = now.Add(time.Minute)
	call(`1`)
	if runs != 2 {
		t.Fatalf("expired entry served: runs %d", runs)
	}
	call(`2`)
	call(`3`)
	if len(c.entries) > 2 {
		t.Fatalf("cache holds %d entries, max 2", len(c.entries))
	}
}

func TestToolCache_ConcurrentRuns(t *testing.T) {
	t.Parallel()
	c := newToolCache(time.Minute, 8)
	h := c.wrap(func(_ context.Context, call model.ToolCall) tool.Result {
		return tool.Result{Call: call, Content: "r" + call.Arguments}
	})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 50 {
				args := string(rune('0' + (i+j)%12))
				if r := h(t.Context(), model.ToolCall{Name: "t", Arguments: args}); r.Content != "r"+args {
					t.Errorf("got %q for %q", r.Content, args)
				}
			}
		})
	}
	wg.Wait()
}

func TestContext_DatetimeInTimezoneLocationAndName(t *testing.T) {
	t.Parallel()
	rec := &recorder{Model: scripted.Reply("ok")}
	a := mustAgent(t, Config{Name: "Ada", Model: rec, AddDatetimeToContext: true, Timezone: "Asia/Kolkata",
		AddLocationToContext: true, Location: "Pune, India", AddNameToContext: true})
	if _, err := a.Run(t.Context(), run.TextInput("x")); err != nil {
		t.Fatal(err)
	}
	sys := rec.requests()[0][0].Content
	for _, want := range []string{"+05:30.", "- Your approximate location is: Pune, India.", "- Your name is: Ada."} {
		if !strings.Contains(sys, want) {
			t.Fatalf("system message lacks %q:\n%s", want, sys)
		}
	}
	for _, cfg := range []Config{
		{Model: rec, Timezone: "Mars/Olympus"},
		{Model: rec, AddLocationToContext: true},
		{Model: rec, AddNameToContext: true},
		{Model: rec, Retries: -1},
		{Model: rec, CacheTTL: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Fatalf("New accepted %+v", cfg)
		}
	}
}

// flaky fails its first n requests before yielding anything.
type flaky struct {
	model.Model
	n     atomic.Int32
	fails int32
}

func (f *flaky) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	if f.n.Add(1) <= f.fails {
		return func(yield func(*model.Chunk, error) bool) {
			yield(nil, &model.ProviderError{Provider: "flaky", StatusCode: 400, Message: "bad day", Kind: model.ErrBadRequest})
		}
	}
	return f.Model.Stream(ctx, req)
}

func TestRetries_ReaskTheModelAfterAnyError(t *testing.T) {
	t.Parallel()
	m := &flaky{Model: scripted.Reply("finally"), fails: 2}
	a := mustAgent(t, Config{Model: m, Retries: 2, DelayBetweenRetries: time.Millisecond})
	out, err := a.Run(t.Context(), run.TextInput("x"))
	if err != nil || out.Content != "finally" {
		t.Fatalf("content %v err %v", out.Content, err)
	}
	m = &flaky{Model: scripted.Reply("finally"), fails: 2}
	a = mustAgent(t, Config{Model: m, Retries: 1, DelayBetweenRetries: time.Millisecond})
	if out, err := a.Run(t.Context(), run.TextInput("x")); err == nil || out.Status != run.StatusError {
		t.Fatalf("one retry for two failures: status %s", out.Status)
	}
	if n := m.n.Load(); n != 2 {
		t.Fatalf("model asked %d times, want 2", n)
	}
}

func TestRetries_DelayIsFixedOrDoubling(t *testing.T) {
	t.Parallel()
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if got := delayAfter(time.Second, true, i); got != want {
			t.Fatalf("exponential attempt %d: %s, want %s", i, got, want)
		}
		if got := delayAfter(time.Second, false, i); got != time.Second {
			t.Fatalf("fixed attempt %d: %s", i, got)
		}
	}
	a := mustAgent(t, Config{Model: scripted.Reply("x"), Retries: 1})
	if a.Config().DelayBetweenRetries != DefaultDelayBetweenRetries {
		t.Fatalf("default delay %s", a.Config().DelayBetweenRetries)
	}
}

func TestDebugMode_WritesARunTrace(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 2, "b": 2}}}}, {Content: "four"},
	}})
	a := mustAgent(t, Config{ID: "dbg", Model: m, Tools: []tool.Tool{addTool()}, Instructions: Instructions{"Be brief."}, DebugMode: true, DebugWriter: &buf})
	out, err := a.Run(t.Context(), run.TextInput("2+2?"))
	if err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, want := range []string{
		"DEBUG agent=dbg run=" + out.RunID + " RunStarted Scripted:scripted",
		"DEBUG   system: Be brief.",
		"DEBUG   user: 2+2?",
		`ToolCallCompleted add({"a":2,"b":2}) -> 4`,
		"RunCompleted four",
	} {
		if !strings.Contains(s, want) {
			t.Fatalf("trace lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "RunContent ") {
		t.Fatalf("trace has content deltas:\n%s", s)
	}
}

func slogTo(w *bytes.Buffer, mu *sync.Mutex) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{w, mu}, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// NoDelayBetweenRetries retries at once (Agno's delay_between_retries=0);
// zero still takes the 1s default. Timed on synctest's fake clock: the
// run's time is exactly the waits between its attempts.
func TestRetries_NoDelayBetweenRetriesRetriesAtOnce(t *testing.T) {
	for _, c := range []struct {
		delay time.Duration
		want  time.Duration
	}{{NoDelayBetweenRetries, 0}, {0, 2 * DefaultDelayBetweenRetries}, {time.Millisecond, 2 * time.Millisecond}} {
		synctest.Test(t, func(t *testing.T) {
			m := &flaky{Model: scripted.Reply("finally"), fails: 2}
			a := mustAgent(t, Config{Model: m, Retries: 2, DelayBetweenRetries: c.delay})
			start := time.Now()
			out, err := a.Run(t.Context(), run.TextInput("x"))
			if err != nil || out.Content != "finally" {
				t.Fatalf("content %v err %v", out.Content, err)
			}
			if got := time.Since(start); got != c.want {
				t.Fatalf("DelayBetweenRetries %s: the run waited %s, want %s", c.delay, got, c.want)
			}
		})
	}
	if _, err := New(Config{Model: scripted.Reply("x"), Retries: 1, DelayBetweenRetries: -2}); err == nil {
		t.Fatal("a negative delay other than NoDelayBetweenRetries was accepted")
	}
}
