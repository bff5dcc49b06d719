package scripted

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
)

func user(s string) model.Message { return model.Text(model.RoleUser, s) }

func drain(t *testing.T, m model.Model, req *model.Request) (*model.Response, int, error) {
	t.Helper()
	var acc model.Accumulator
	n := 0
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			return acc.Response(), n, err
		}
		n++
		acc.Add(c)
	}
	return acc.Response(), n, nil
}

func TestStream_ReassemblesContentAndToolCalls(t *testing.T) {
	t.Parallel()
	m := MustNew(Config{Turns: []Turn{
		{Reasoning: "think first", ToolCalls: []ToolCall{
			{Name: "lookup", Args: map[string]any{"query": "a fairly long query that needs fragments"}},
			{ID: "fixed", Name: "other", RawArgs: `{"x":`},
		}},
		{Content: "the answer is  42\nthanks"},
	}})
	req := &model.Request{Messages: []model.Message{user("hi")}}
	resp, n, err := drain(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Errorf("want several chunks, got %d", n)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 2 || calls[0].Name != "lookup" || calls[0].ID != "call_0_0" ||
		calls[0].Arguments != `{"query":"a fairly long query that needs fragments"}` ||
		calls[1].ID != "fixed" || calls[1].Arguments != `{"x":` {
		t.Fatalf("tool calls = %+v", calls)
	}
	if resp.Message.ReasoningContent != "think first" || resp.StopReason != "tool_calls" {
		t.Errorf("reasoning %q stop %q", resp.Message.ReasoningContent, resp.StopReason)
	}
	if resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens == 0 || resp.Usage.TotalTokens != resp.Usage.InputTokens+resp.Usage.OutputTokens {
		t.Errorf("usage %+v", resp.Usage)
	}
	req.Messages = append(req.Messages, resp.Message, model.Message{Role: model.RoleTool, Content: "r"})
	resp, _, err = drain(t, m, req)
	if err != nil || resp.Message.Content != "the answer is  42\nthanks" || resp.StopReason != "stop" {
		t.Fatalf("second turn: %+v %v", resp.Message, err)
	}
	inv, err := m.Invoke(context.Background(), req)
	if err != nil || inv.Message.Content != resp.Message.Content || inv.Usage != resp.Usage {
		t.Fatalf("invoke differs from stream: %+v %v", inv, err)
	}
}

func TestPick_PositionRestartsAtEachUserMessage(t *testing.T) {
	t.Parallel()
	m := MustNew(Config{Turns: []Turn{{Content: "one"}, {Content: "two"}}})
	asst := model.Text(model.RoleAssistant, "x")
	tests := []struct {
		name string
		msgs []model.Message
		want string
	}{
		{"first", []model.Message{user("a")}, "one"},
		{"second after an assistant turn", []model.Message{user("a"), asst}, "two"},
		{"history does not count", []model.Message{user("a"), asst, asst, user("b")}, "one"},
		{"exhausted repeats last", []model.Message{user("a"), asst, asst, asst}, "two"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, err := m.Invoke(context.Background(), &model.Request{Messages: tc.msgs})
			if err != nil || resp.Message.Content != tc.want {
				t.Fatalf("got %q %v, want %q", resp.Message.Content, err, tc.want)
			}
		})
	}
}

func TestPick_MatchAndExhaustion(t *testing.T) {
	t.Parallel()
	turns := []Turn{{Match: "Weather", Content: "sunny"}, {Match: "weather", Content: "still sunny"}, {Content: "hello"}}
	asst := model.Text(model.RoleAssistant, "x")
	tests := []struct {
		name    string
		on      Exhausted
		msgs    []model.Message
		want    string
		wantErr error
	}{
		{"match is case-insensitive", "", []model.Message{user("what's the WEATHER?")}, "sunny", nil},
		{"match advances", "", []model.Message{user("weather"), asst}, "still sunny", nil},
		{"no match falls to default", "", []model.Message{user("hi")}, "hello", nil},
		{"cycle", Cycle, []model.Message{user("hi"), asst}, "hello", nil},
		{"error", Fail, []model.Message{user("hi"), asst}, "", model.ErrBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := MustNew(Config{Turns: turns, OnExhausted: tc.on})
			resp, err := m.Invoke(context.Background(), &model.Request{Messages: tc.msgs})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || resp.Message.Content != tc.want {
				t.Fatalf("got %+v %v, want %q", resp, err, tc.want)
			}
		})
	}
}

func TestStream_ErrorMidStreamAfterContent(t *testing.T) {
	t.Parallel()
	m := MustNew(Config{Turns: []Turn{{Content: "partial answer", Error: "boom", ErrorKind: "server"}}})
	resp, n, err := drain(t, m, &model.Request{Messages: []model.Message{user("x")}})
	if !errors.Is(err, model.ErrServer) || n != 2 || resp.Message.Content != "partial answer" {
		t.Fatalf("n=%d content=%q err=%v", n, resp.Message.Content, err)
	}
}

func TestStream_LatencyHonoursCancellation(t *testing.T) {
	t.Parallel()
	m := MustNew(Config{Turns: []Turn{{Content: "a b c"}}, Latency: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range m.Stream(ctx, &model.Request{}) {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		return
	}
	t.Fatal("stream yielded nothing")
}

func TestStream_ConcurrentConversationsAreIndependent(t *testing.T) {
	t.Parallel()
	m := MustNew(Config{Turns: []Turn{{Content: "one"}, {Content: "two"}}, ChunkLatency: time.Microsecond})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs := []model.Message{user("hi")}
			if i%2 == 1 {
				msgs = append(msgs, model.Text(model.RoleAssistant, "x"))
			}
			want := map[bool]string{false: "one", true: "two"}[i%2 == 1]
			var acc model.Accumulator
			for c, err := range m.Stream(context.Background(), &model.Request{Messages: msgs}) {
				if err != nil {
					t.Error(err)
					return
				}
				acc.Add(c)
			}
			if got := acc.Response().Message.Content; got != want {
				t.Errorf("got %q want %q", got, want)
			}
		}()
	}
	wg.Wait()
}

func TestNew_RejectsInvalidScripts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no turns", Config{}},
		{"empty turn", Config{Turns: []Turn{{}}}},
		{"unnamed tool call", Config{Turns: []Turn{{ToolCalls: []ToolCall{{}}}}}},
		{"bad exhausted", Config{Turns: []Turn{{Content: "x"}}, OnExhausted: "nope"}},
		{"bad error kind", Config{Turns: []Turn{{Error: "x", ErrorKind: "nope"}}}},
		{"negative latency", Config{Turns: []Turn{{Content: "x"}}, Latency: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := New(tc.cfg); err == nil {
				t.Fatal("want error")
			}
		})
	}
}

func TestLoad_YAMLAndJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"s.yaml": "id: demo\nlatency: 1ms\nturns:\n  - tool_calls:\n      - name: get_weather\n        args: {city: Paris, days: [1, 2]}\n  - content: It is sunny.\n",
		"s.json": `{"id":"demo","latency":"1ms","turns":[{"tool_calls":[{"name":"get_weather","args":{"city":"Paris","days":[1,2]}}]},{"content":"It is sunny."}]}`,
	}
	for name, body := range files {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			m, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if m.Info().ID != "demo" || m.Info().Provider != "Scripted" {
				t.Errorf("info %+v", m.Info())
			}
			resp, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{user("x")}})
			if err != nil || len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Arguments != `{"city":"Paris","days":[1,2]}` {
				t.Fatalf("%+v %v", resp, err)
			}
		})
	}
}

func TestLoad_RejectsUnknownKeysAndBadDurations(t *testing.T) {
	t.Parallel()
	for _, body := range []string{"turns:\n  - contnet: x\n", "latency: soon\nturns:\n  - content: x\n"} {
		if _, err := Parse([]byte(body), false); err == nil {
			t.Errorf("want error for %q", body)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("want error for a missing file")
	}
}

func TestLoad_DemoScript(t *testing.T) {
	t.Parallel()
	m, err := Load("testdata/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{user("what's the weather?")}})
	if err != nil || len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Name != "get_weather" {
		t.Fatalf("%+v %v", resp, err)
	}
	resp, err = m.Invoke(context.Background(), &model.Request{Messages: []model.Message{user("hi")}})
	if err != nil || !strings.HasPrefix(resp.Message.Content, "Hello!") {
		t.Fatalf("%+v %v", resp, err)
	}
}

// The scripted model reads a request's History before its Messages: the
// turn is picked (by position and by Match) and the input tokens counted
// over the whole conversation, as if it all were in Messages, and the
// shared history is left as it was.
func TestStream_ReadsHistoryBeforeMessages(t *testing.T) {
	t.Parallel()
	m := MustNew(Config{Turns: []Turn{
		{Match: "paris", Content: "first paris answer"},
		{Match: "paris", Content: "second paris answer"},
		{Content: "no match"},
	}})
	conv := func() []model.Message {
		return []model.Message{
			{Role: model.RoleSystem, Content: "be brief"},
			user("weather in Lyon?"),
			{Role: model.RoleAssistant, Content: "no match"},
			user("and in Paris?"),
			{Role: model.RoleAssistant, Content: "first paris answer"},
		}
	}
	for _, split := range []int{0, 1, 3, 4, 5} {
		c := conv()
		flat, _, err := drain(t, m, &model.Request{Messages: conv()})
		if err != nil {
			t.Fatal(err)
		}
		req := &model.Request{History: model.NewHistory(nil, c[:0]), Messages: c}
		if split > 0 {
			req = &model.Request{History: model.NewHistory(c[:1], nil, c[1:split]), Messages: c[split:]}
		}
		got, _, err := drain(t, m, req)
		if err != nil {
			t.Fatal(err)
		}
		if got.Message.Content != "second paris answer" || got.Message.Content != flat.Message.Content {
			t.Errorf("history up to %d: answer %q, want %q (as with all in Messages)", split, got.Message.Content, flat.Message.Content)
		}
		if got.Usage != flat.Usage {
			t.Errorf("history up to %d: usage %+v, want %+v", split, got.Usage, flat.Usage)
		}
		if inv, err := m.Invoke(context.Background(), req); err != nil || inv.Message.Content != got.Message.Content {
			t.Errorf("history up to %d: Invoke %+v %v", split, inv, err)
		}
		if fmt.Sprint(c) != fmt.Sprint(conv()) {
			t.Errorf("history up to %d: the model changed the request's messages: %+v", split, c)
		}
	}
}
