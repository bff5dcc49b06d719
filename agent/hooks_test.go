package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

func TestPreHook_ModifiesInputTheModelSeesAndTheRunStores(t *testing.T) {
	t.Parallel()
	rec := &recorder{Model: scripted.Reply("ok")}
	redact := PreHookFunc("redact", func(_ context.Context, in *run.Input) error {
		in.InputContent = strings.ReplaceAll(in.Text(), "secret", "******")
		return nil
	})
	a := mustAgent(t, Config{Model: rec, PreHooks: []PreHook{redact}})
	out, err := a.Run(t.Context(), run.TextInput("my secret is here"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	if len(reqs) != 1 || reqs[0][len(reqs[0])-1].Content != "my ****** is here" {
		t.Fatalf("model saw %+v", reqs)
	}
	if got := out.Input.Text(); got != "my ****** is here" {
		t.Fatalf("stored input = %q", got)
	}
}

func TestPreHook_InputCheckErrorRejectsTheRunBeforeTheModel(t *testing.T) {
	t.Parallel()
	rec := &recorder{Model: scripted.Reply("never")}
	reject := PreHookFunc("no_weather", func(_ context.Context, in *run.Input) error {
		if strings.Contains(in.Text(), "weather") {
			return &InputCheckError{Message: "weather is off topic", Trigger: TriggerOffTopic, AdditionalData: map[string]any{"topic": "weather"}}
		}
		return nil
	})
	a := mustAgent(t, Config{Model: rec, PreHooks: []PreHook{reject}})
	out, err := a.Run(t.Context(), run.TextInput("what is the weather"))
	if !errors.Is(err, ErrInputCheck) {
		t.Fatalf("err = %v, want ErrInputCheck", err)
	}
	var ice *InputCheckError
	if !errors.As(err, &ice) || ice.Trigger != TriggerOffTopic {
		t.Fatalf("err = %#v", err)
	}
	if out.Status != run.StatusError || out.Content != "weather is off topic" {
		t.Fatalf("status %s content %v", out.Status, out.Content)
	}
	if n := len(rec.requests()); n != 0 {
		t.Fatalf("the model was asked %d times", n)
	}

	evs := collect(t, a.Stream(t.Context(), run.TextInput("the weather?")))
	want := []run.EventType{run.EventRunStarted, run.EventPreHookStarted, run.EventRunError}
	if !slices.Equal(names(evs), want) {
		t.Fatalf("events %v, want %v", names(evs), want)
	}
	if e := evs[1]; e.PreHookName != "no_weather" || e.RunInput == nil || e.RunInput.Text() != "the weather?" {
		t.Fatalf("PreHookStarted = %+v", e)
	}
	e := evs[2]
	if e.ErrorType != "input_check_error" || e.ErrorID != "off_topic" || e.Content != "weather is off topic" || e.AdditionalData["topic"] != "weather" {
		t.Fatalf("RunError = %+v", e)
	}
}

func TestHooks_EventsInAgnoOrder(t *testing.T) {
	t.Parallel()
	pre := PreHookFunc("pre", func(context.Context, *run.Input) error { return nil })
	post := PostHookFunc("post", func(context.Context, *run.Output) error { return nil })
	a := mustAgent(t, Config{Model: scripted.Reply("hi"), PreHooks: []PreHook{pre}, PostHooks: []PostHook{post}})
	var got []run.EventType
	for _, n := range names(collect(t, a.Stream(t.Context(), run.TextInput("x")))) {
		if n != run.EventRunContent {
			got = append(got, n)
		}
	}
	want := []run.EventType{run.EventRunStarted, run.EventPreHookStarted, run.EventPreHookCompleted,
		run.EventModelRequestStarted, run.EventModelRequestCompleted, run.EventRunContentCompleted,
		run.EventPostHookStarted, run.EventPostHookCompleted, run.EventRunCompleted}
	if !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
}

func TestPostHook_ModifiesOrRejectsTheOutput(t *testing.T) {
	t.Parallel()
	upper := PostHookFunc("upper", func(_ context.Context, out *run.Output) error {
		out.Content = strings.ToUpper(run.ContentText(out.Content))
		return nil
	})
	a := mustAgent(t, Config{Model: scripted.Reply("quiet answer"), PostHooks: []PostHook{upper}})
	out, err := a.Run(t.Context(), run.TextInput("x"))
	if err != nil || out.Content != "QUIET ANSWER" {
		t.Fatalf("content %v err %v", out.Content, err)
	}

	reject := PostHookFunc("no_leaks", func(_ context.Context, out *run.Output) error {
		if strings.Contains(run.ContentText(out.Content), "password") {
			return &OutputCheckError{Message: "the answer leaks a password"}
		}
		return nil
	})
	a = mustAgent(t, Config{Model: scripted.Reply("the password is hunter2"), PostHooks: []PostHook{reject}, StoreEvents: true})
	out, err = a.Run(t.Context(), run.TextInput("x"))
	if !errors.Is(err, ErrOutputCheck) || out.Status != run.StatusError {
		t.Fatalf("err %v status %s", err, out.Status)
	}
	if out.Content != "the answer leaks a password" {
		t.Fatalf("rejected output is returned: %v", out.Content)
	}
	last := out.Events[len(out.Events)-1]
	if last.Event != run.EventRunError || last.ErrorType != "output_check_error" || last.ErrorID != "output_not_allowed" {
		t.Fatalf("last stored event %+v", last)
	}
	if find(out.Events, run.EventRunCompleted) != nil {
		t.Fatal("a rejected run has a RunCompleted event")
	}
}

func TestHooks_OtherErrorsAndPanicsEndTheRunNamingTheHook(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		hook PreHook
		want string
	}{
		{"error", PreHookFunc("audit", func(context.Context, *run.Input) error { return errors.New("audit log unavailable") }), `pre-hook "audit": audit log unavailable`},
		{"panic", PreHookFunc("boom", func(context.Context, *run.Input) error { panic("oops") }), "hook panicked: boom: oops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := mustAgent(t, Config{Model: scripted.Reply("never"), PreHooks: []PreHook{tc.hook}})
			out, err := a.Run(t.Context(), run.TextInput("x"))
			if err == nil || out.Status != run.StatusError || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("status %s err %v, want %q", out.Status, err, tc.want)
			}
			if errors.Is(err, ErrInputCheck) {
				t.Fatal("a failing hook is reported as a rejected input")
			}
		})
	}
}

func TestHooks_SeeTheRunContext(t *testing.T) {
	t.Parallel()
	var got RunContext
	pre := PreHookFunc("ctx", func(ctx context.Context, _ *run.Input) error {
		got, _ = FromContext(ctx)
		return nil
	})
	a := mustAgent(t, Config{ID: "helper", Model: scripted.Reply("ok"), PreHooks: []PreHook{pre}})
	out, err := a.Run(t.Context(), run.TextInput("x"), WithUserID("u1"))
	if err != nil {
		t.Fatal(err)
	}
	if got.AgentID != "helper" || got.UserID != "u1" || got.RunID != out.RunID {
		t.Fatalf("run context %+v", got)
	}
}

func TestNew_RefusesNilHooks(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Model: scripted.Reply("x"), PreHooks: []PreHook{nil}},
		{Model: scripted.Reply("x"), PostHooks: []PostHook{nil}},
		{Model: scripted.Reply("x"), ToolHooks: []ToolHook{nil}},
	} {
		if _, err := New(cfg); err == nil {
			t.Fatalf("New accepted %+v", cfg)
		}
	}
}

func TestHooks_ContinuedRunRunsPostHooksNotPreHooks(t *testing.T) {
	t.Parallel()
	var pre, post atomic.Int32
	del := funcTool("delete_file", tool.FuncConfig{RequiresConfirmation: true}, func(context.Context) (string, error) { return "deleted", nil })
	a := mustAgent(t, Config{
		Model:    script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "delete_file"}}}, scripted.Turn{Content: "all done"}),
		Tools:    []tool.Tool{del},
		PreHooks: []PreHook{PreHookFunc("pre", func(context.Context, *run.Input) error { pre.Add(1); return nil })},
		PostHooks: []PostHook{PostHookFunc("post", func(_ context.Context, out *run.Output) error {
			post.Add(1)
			out.Content = "checked: " + run.ContentText(out.Content)
			return nil
		})},
	})
	out, err := a.Run(t.Context(), run.TextInput("delete it"))
	if err != nil || out.Status != run.StatusPaused || pre.Load() != 1 || post.Load() != 0 {
		t.Fatalf("paused: status %s err %v pre %d post %d", out.Status, err, pre.Load(), post.Load())
	}
	out.Requirements[0].ToolExecution.Confirmed = boolp(true)
	out, err = a.ContinueRun(t.Context(), out)
	if err != nil || out.Content != "checked: all done" || pre.Load() != 1 || post.Load() != 1 {
		t.Fatalf("continued: content %v err %v pre %d post %d", out.Content, err, pre.Load(), post.Load())
	}
}
