package openai

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// realStream is a complete streamed answer in OpenAI's framing: text, two
// parallel tool calls with split arguments, finish reason and usage.
func realStream(textChunks int) []byte {
	var b bytes.Buffer
	const head = `data: {"id":"chatcmpl-AcD1","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":`
	const tail = `,"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"
	b.WriteString(head + `{"role":"assistant","content":"","refusal":null}` + tail)
	for i := range textChunks {
		fmt.Fprintf(&b, head+`{"content":"token %d "}`+tail, i)
	}
	b.WriteString(head + `{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}` + tail)
	b.WriteString(head + `{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}` + tail)
	b.WriteString(head + `{"tool_calls":[{"index":0,"function":{"arguments":" \"Paris\"}"}}]}` + tail)
	b.WriteString(head + `{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]}` + tail)
	b.WriteString(`data: {"id":"chatcmpl-AcD1","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}` + "\n\n")
	b.WriteString(`data: {"id":"chatcmpl-AcD1","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":5}}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

func testModel(tb testing.TB) *Model {
	tb.Helper()
	m, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: "gpt-4o-mini"})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func TestDecodeStream_RealStream(t *testing.T) {
	t.Parallel()
	var acc model.Accumulator
	for c, err := range testModel(t).decodeStream(bytes.NewReader(realStream(3))) {
		if err != nil {
			t.Fatal(err)
		}
		acc.Add(c)
	}
	r := acc.Response()
	if r.Message.Content != "token 0 token 1 token 2 " || len(r.Message.ToolCalls) != 2 ||
		r.Message.ToolCalls[0].Arguments != `{"city": "Paris"}` || r.Usage.TotalTokens != 99 {
		t.Fatalf("response = %+v", r)
	}
}

// FuzzStreamDecoder feeds arbitrary bytes as the SSE body. The decoder must not
// panic, must stop after its first error, must end with an error unless it saw
// "data: [DONE]" or a finish_reason, and every error must be classified.
func FuzzStreamDecoder(f *testing.F) {
	f.Add(realStream(2))
	f.Add([]byte("data: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\"},{\"index\":0,\"id\":\"b\",\"function\":{\"arguments\":{\"x\":1}}}]}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"code\":500}}\n\n"))
	f.Add([]byte("data: {\"error\":\"plain\"}\r\n\r\n"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"cho"))
	f.Add([]byte(": keep-alive\n\nevent: x\ndata: [DONE]\n\n"))
	m := testModel(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var failed error
		finished := false
		for c, err := range m.decodeStream(bytes.NewReader(body)) {
			if failed != nil {
				t.Fatalf("item after error %v", failed)
			}
			finished = finished || c != nil && c.StopReason != ""
			if err != nil {
				failed = err
				var pe *model.ProviderError
				if !errors.Is(err, model.ErrMalformedResponse) && !errors.As(err, &pe) {
					t.Fatalf("unclassified error: %v", err)
				}
			}
		}
		if failed == nil && !finished && !bytes.Contains(body, []byte("[DONE]")) {
			t.Fatalf("stream without [DONE] or a finish_reason ended cleanly: %q", body)
		}
	})
}

func BenchmarkDecodeStream_100Chunks(b *testing.B) {
	body := realStream(100 - 7) // 93 text chunks + role, 4 tool, finish, usage = 100 chunks
	if n := strings.Count(string(body), "data: {"); n != 100 {
		b.Fatalf("stream has %d chunks, want 100", n)
	}
	m := testModel(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		n := 0
		for _, err := range m.decodeStream(bytes.NewReader(body)) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 99 { // the empty role chunk yields nothing
			b.Fatalf("yielded %d chunks", n)
		}
	}
}

// FuzzDecodeResponse feeds arbitrary bytes as a non-streamed answer. The
// decoder must not panic, must return a response or an error (never
// neither), classify every error, and give every tool call an id (tool
// results are matched to calls by it).
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"id":"c","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}},{"type":"function","function":{"name":"g","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4,"prompt_tokens_details":{"cached_tokens":2}}}`))
	f.Add([]byte(`{"choices":[{"index":0,"message":{"refusal":"no"},"finish_reason":"content_filter"}]}`))
	f.Add([]byte(`{"error":{"code":502,"message":"Provider returned error"}}`))
	f.Add([]byte(`{"object":"error","message":"too long","type":"BadRequestError"}`))
	f.Add([]byte(`{"choices":[{"index":1}]}`))
	m := testModel(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := m.decodeResponse(data)
		if err != nil {
			var pe *model.ProviderError
			if !errors.Is(err, model.ErrMalformedResponse) && !errors.As(err, &pe) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if r == nil {
			t.Fatal("no response and no error")
		}
		for _, tc := range r.Message.ToolCalls {
			if tc.ID == "" {
				t.Fatalf("tool call without an id: %+v", r.Message.ToolCalls)
			}
		}
	})
}
