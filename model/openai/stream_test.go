package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/openai"
)

// drain collects a stream; err is the first error, after which the stream must end.
func drain(t *testing.T, m model.Model, req *model.Request) ([]*model.Chunk, *model.Response, error) {
	t.Helper()
	var (
		chunks []*model.Chunk
		acc    model.Accumulator
		failed error
	)
	for c, err := range m.Stream(context.Background(), req) {
		if failed != nil {
			t.Fatalf("stream yielded %v, %v after error %v", c, err, failed)
		}
		if err != nil {
			failed = err
			continue
		}
		chunks = append(chunks, c)
		acc.Add(c)
	}
	return chunks, acc.Response(), failed
}

func userReq(text string) *model.Request {
	return &model.Request{Messages: []model.Message{model.Text(model.RoleUser, text)}}
}

func TestStream_TextDeltasUsageAndStopReason(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{events: []string{chunkRole, chunkContent("Hel"), chunkContent("lo, "), chunkContent("world"), chunkStop, chunkUsage}})
	m, err := openai.New(openai.Config{
		APIKey: "sk-test", BaseURL: f.URL + "/v1", Model: "gpt-4o-mini",
		Organization: "org-42", Headers: map[string]string{"X-Trace": "abc"},
	})
	if err != nil {
		t.Fatal(err)
	}
	chunks, resp, err := drain(t, m, userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	var deltas []string
	for _, c := range chunks {
		if c.Content != "" {
			deltas = append(deltas, c.Content)
		}
	}
	if got := strings.Join(deltas, "|"); got != "Hel|lo, |world" {
		t.Errorf("content deltas = %q, want Hel|lo, |world", got)
	}
	if last := chunks[len(chunks)-1]; last.Usage == nil {
		t.Errorf("last chunk has no usage: %+v", last)
	}
	want := model.Usage{InputTokens: 82, OutputTokens: 17, TotalTokens: 99, CacheReadTokens: 64, ReasoningTokens: 5}
	if resp.Message.Content != "Hello, world" || resp.StopReason != "stop" || resp.Usage != want || resp.ModelID != "gpt-4o-mini-2024-07-18" {
		t.Errorf("response = %+v, want content, stop, usage %+v and model id", resp, want)
	}

	got := f.only()
	if got.path != "/v1/chat/completions" {
		t.Errorf("path = %q", got.path)
	}
	for k, v := range map[string]string{
		"Authorization": "Bearer sk-test", "Accept": "text/event-stream", "Content-Type": "application/json",
		"OpenAI-Organization": "org-42", "X-Trace": "abc",
	} {
		if got.header.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, got.header.Get(k), v)
		}
	}
	assertJSON(t, got.body, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],
		"stream":true,"stream_options":{"include_usage":true}}`)
}

func TestStream_ParallelToolCallsWithSplitArguments(t *testing.T) {
	t.Parallel()
	first := `{"id":"chatcmpl-AcD2","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_Wx1","type":"function","function":{"name":"get_weather","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`
	f := newFake(t, reply{events: []string{
		first,
		chunkTool(0, "", "", `{"ci`),
		chunkTool(0, "", "", `ty": "Pa`),
		chunkTool(0, "", "", `ris"}`),
		chunkTool(1, "call_Tm2", "get_time", ""),
		chunkTool(1, "", "", `{"tz":`),
		chunkTool(1, "", "", ` "Europe/`),
		chunkTool(1, "", "", `Paris"}`),
		chunkToolStop,
		chunkUsage,
	}})
	chunks, resp, err := drain(t, newModel(t, f), userReq("weather and time in Paris?"))
	if err != nil {
		t.Fatal(err)
	}
	var fragments int
	for _, c := range chunks {
		fragments += len(c.ToolCalls)
	}
	if fragments != 8 {
		t.Errorf("got %d tool-call fragments, want 8 (one per chunk)", fragments)
	}
	want := []model.ToolCall{
		{ID: "call_Wx1", Name: "get_weather", Arguments: `{"city": "Paris"}`},
		{ID: "call_Tm2", Name: "get_time", Arguments: `{"tz": "Europe/Paris"}`},
	}
	if len(resp.Message.ToolCalls) != 2 || resp.Message.ToolCalls[0] != want[0] || resp.Message.ToolCalls[1] != want[1] {
		t.Fatalf("tool calls = %+v, want %+v", resp.Message.ToolCalls, want)
	}
	if resp.StopReason != "tool_calls" || resp.Message.Content != "" {
		t.Errorf("stop = %q content = %q, want tool_calls and no content", resp.StopReason, resp.Message.Content)
	}
}

func TestStream_ReasoningContentDeltas(t *testing.T) {
	t.Parallel()
	reasoning := func(field, s string) string {
		return `{"id":"x","object":"chat.completion.chunk","created":1,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"role":"assistant","content":null,"` + field + `":"` + s + `"},"logprobs":null,"finish_reason":null}]}`
	}
	f := newFake(t, reply{events: []string{
		reasoning("reasoning_content", "Think "), reasoning("reasoning_content", "hard."), reasoning("reasoning", " Again."),
		chunkContent("42"), chunkStop,
	}})
	_, resp, err := drain(t, newModel(t, f), userReq("meaning?"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.ReasoningContent != "Think hard. Again." || resp.Message.Content != "42" {
		t.Fatalf("reasoning = %q content = %q", resp.Message.ReasoningContent, resp.Message.Content)
	}
}

// vLLM, while renaming reasoning_content to reasoning, sends the same text in
// both fields of each delta (vllm-project/vllm#27752): it is reasoning once,
// as Invoke reads the message.
func TestStream_ReasoningInBothFieldsIsNotDoubled(t *testing.T) {
	t.Parallel()
	both := func(s string) string {
		return `{"id":"x","object":"chat.completion.chunk","created":1,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"content":null,"reasoning":"` + s + `","reasoning_content":"` + s + `"},"logprobs":null,"finish_reason":null}]}`
	}
	f := newFake(t, reply{events: []string{both("Think "), both("hard."), chunkContent("42"), chunkStop}})
	_, resp, err := drain(t, newModel(t, f), userReq("meaning?"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.ReasoningContent != "Think hard." || resp.Message.Content != "42" {
		t.Fatalf("reasoning = %q content = %q", resp.Message.ReasoningContent, resp.Message.Content)
	}
}

func TestStream_InvalidToolArgumentsPassThrough(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{events: []string{
		chunkTool(0, "call_bad", "search", `{"query": "go`),
		chunkTool(0, "", "", `lang", limit: ten`),
		chunkToolStop,
	}})
	_, resp, err := drain(t, newModel(t, f), userReq("search"))
	if err != nil {
		t.Fatalf("invalid arguments must not fail the stream: %v", err)
	}
	if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Arguments != `{"query": "golang", limit: ten` {
		t.Fatalf("tool calls = %+v, want the raw invalid arguments", resp.Message.ToolCalls)
	}
}

func TestStream_ToolCallsFromCompatibleServers(t *testing.T) {
	t.Parallel()
	whole := func(index, id, name, args string) string {
		return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"llama3.2","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{` + index + `"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + args + `}}]},"finish_reason":null}]}`
	}
	tests := []struct {
		name   string
		events []string
		want   []model.ToolCall
	}{
		{
			name: "every call reuses index 0",
			events: []string{
				whole(`"index":0,`, "call_a", "get_weather", `"{\"city\":\"Oslo\"}"`),
				whole(`"index":0,`, "call_b", "get_time", `"{}"`),
			},
			want: []model.ToolCall{{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Oslo"}`}, {ID: "call_b", Name: "get_time", Arguments: `{}`}},
		},
		{
			name: "no index and arguments as an object",
			events: []string{
				whole("", "call_x", "lookup", `{"id": 7}`),
			},
			want: []model.ToolCall{{ID: "call_x", Name: "lookup", Arguments: `{"id": 7}`}},
		},
		{
			name: "id and name repeated in every fragment",
			events: []string{
				whole(`"index":0,`, "call_r", "sum", `"{\"a\":"`),
				whole(`"index":0,`, "call_r", "sum", `"1}"`),
			},
			want: []model.ToolCall{{ID: "call_r", Name: "sum", Arguments: `{"a":1}`}},
		},
		{
			name: "interleaved calls repeating ids, one name split",
			events: []string{
				whole(`"index":0,`, "call_p", "al", `"{\"a\":"`),
				whole(`"index":1,`, "call_q", "beta", `"{\"b\":"`),
				whole(`"index":2,`, "call_s", "gamma", `"{}"`),
				whole(`"index":0,`, "call_p", "pha", `"1}"`),
				whole(`"index":1,`, "call_q", "beta", `"2}"`),
			},
			want: []model.ToolCall{
				{ID: "call_p", Name: "alpha", Arguments: `{"a":1}`},
				{ID: "call_q", Name: "beta", Arguments: `{"b":2}`},
				{ID: "call_s", Name: "gamma", Arguments: `{}`},
			},
		},
		{
			name: "missing id gets one",
			events: []string{
				whole(`"index":0,`, "", "ping", `"{}"`),
			},
			want: []model.ToolCall{{ID: "call_0", Name: "ping", Arguments: `{}`}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, reply{events: append(tc.events, chunkToolStop)})
			_, resp, err := drain(t, newModel(t, f), userReq("go"))
			if err != nil {
				t.Fatal(err)
			}
			got := resp.Message.ToolCalls
			if len(got) != len(tc.want) {
				t.Fatalf("tool calls = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("call %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestStream_BadStreamsEndWithAnError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		rep      reply
		wantText string // content yielded before the error
		wantKind error
	}{
		{"truncated after a complete chunk", reply{events: []string{chunkContent("par")}, noDone: true}, "par", model.ErrMalformedResponse},
		{"truncated inside a chunk", reply{events: []string{chunkContent("par")}, rawTail: `data: {"id":"chatcmpl-AcD1","obj`, noDone: true}, "par", model.ErrMalformedResponse},
		{"garbage chunk mid-stream", reply{events: []string{chunkContent("ok"), `{"choices":[{"delta":`, chunkContent("never")}}, "ok", model.ErrMalformedResponse},
		{"html instead of a chunk", reply{events: []string{"<html>502 Bad Gateway</html>"}}, "", model.ErrMalformedResponse},
		{"wrong field type", reply{events: []string{`{"choices":[{"index":0,"delta":{"content":17}}]}`}}, "", model.ErrMalformedResponse},
		{"server error object mid-stream", reply{events: []string{chunkContent("a"), `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`}}, "a", model.ErrServer},
		{"rate limit error object mid-stream", reply{events: []string{`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`}}, "", model.ErrRateLimit},
		{"OpenRouter numeric 502 code mid-stream", reply{events: []string{chunkContent("a"), `{"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"openai/gpt-4o","provider":"OpenAI","error":{"code":502,"message":"Provider returned error"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`}}, "a", model.ErrServer},
		{"OpenRouter numeric 429 code before any content", reply{events: []string{`{"error":{"code":429,"message":"Rate limit exceeded"}}`}}, "", model.ErrRateLimit},
		{"vLLM top-level error object", reply{events: []string{`{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`}}, "", model.ErrContextLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tc.rep)
			_, resp, err := drain(t, newModel(t, f), userReq("hi"))
			if !errors.Is(err, tc.wantKind) {
				t.Fatalf("err = %v, want %v", err, tc.wantKind)
			}
			if tc.wantKind != model.ErrMalformedResponse && errors.Is(err, model.ErrMalformedResponse) {
				t.Errorf("error object reported as malformed: %v", err)
			}
			if resp.Message.Content != tc.wantText {
				t.Errorf("content before the error = %q, want %q", resp.Message.Content, tc.wantText)
			}
		})
	}
}

func TestStream_BreakClosesTheConnection(t *testing.T) {
	t.Parallel()
	disconnected := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices a client hang-up only once the body is read.
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+chunkContent("first")+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(disconnected)
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	m, err := openai.New(openai.Config{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for c, err := range m.Stream(context.Background(), userReq("hi")) {
		if err != nil || c.Content != "first" {
			t.Fatalf("first item = %+v, %v", c, err)
		}
		break
	}
	select {
	case <-disconnected:
	case <-time.After(5 * time.Second):
		t.Fatal("server still connected 5s after the consumer stopped reading")
	}
}

func TestStream_CancelledContextIsNotMalformed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices a client hang-up only once the body is read.
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+chunkContent("first")+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	m, err := openai.New(openai.Config{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got error
	for c, err := range m.Stream(ctx, userReq("hi")) {
		if err != nil {
			got = err
			break
		}
		if c.Content == "first" {
			cancel()
		}
	}
	if !errors.Is(got, context.Canceled) || errors.Is(got, model.ErrMalformedResponse) {
		t.Fatalf("err = %v, want context.Canceled only", got)
	}
}

func TestStream_ServerIgnoringStreamAnswersWithJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      string
		wantErr   error
		wantCalls int
	}{
		{"whole completion", completion, nil, 2},
		{"error object", `{"error":{"message":"The server is overloaded","type":"server_error","code":null}}`, model.ErrServer, 0},
		{"invalid JSON", `{"choices":`, model.ErrMalformedResponse, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, reply{body: tc.body})
			chunks, resp, err := drain(t, newModel(t, f), userReq("hi"))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			if len(chunks) != 1 || len(resp.Message.ToolCalls) != tc.wantCalls || resp.Usage.TotalTokens != 120 || resp.StopReason != "tool_calls" {
				t.Fatalf("chunks = %d, response = %+v", len(chunks), resp)
			}
		})
	}
}

// A stream whose last event's line ended but that no blank line followed
// ("data: [DONE]\n", then the connection closes, as some servers end their
// streams) is complete: its answer is the run's, not a malformed stream.
func TestStream_DoneWithoutBlankLineIsComplete(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{events: []string{chunkContent("42"), chunkStop}, noDone: true, rawTail: "data: [DONE]\n"})
	_, resp, err := drain(t, newModel(t, f), userReq("meaning?"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "42" {
		t.Fatalf("content = %q", resp.Message.Content)
	}
}

// A server that ends its stream without "data: [DONE]" (Hugging Face TGI)
// after a chunk gave its finish_reason has sent the whole answer: it is the
// run's, as the OpenAI SDKs take it, not a malformed stream. Cut before any
// finish_reason, a stream is still truncated (TestStream_BadStreamsEndWithAnError).
func TestStream_FinishedWithoutDoneIsComplete(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{events: []string{chunkContent("42"), chunkStop}, noDone: true})
	_, resp, err := drain(t, newModel(t, f), userReq("meaning?"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "42" || resp.StopReason == "" {
		t.Fatalf("response = %+v", resp)
	}
}
