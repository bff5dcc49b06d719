package openaitest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
)

// Reply answers modeltest scenarios in Chat Completions wire format, for
// every provider that speaks it (openai, azure, the OpenAI-compatible presets).
func Reply(t *testing.T, s modeltest.Scenario, r *http.Request, body []byte) modeltest.Reply {
	streamed := bytes.Contains(body, []byte(`"stream":true`))
	completion := func(message, finish string) modeltest.Reply {
		return modeltest.JSON(200, `{"id":"chatcmpl-1","object":"chat.completion","created":1733011200,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":`+message+`,"logprobs":null,"finish_reason":"`+finish+`"}],"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":5}}}`)
	}
	call := func(id, city string) string {
		return `{"id":"` + id + `","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"` + city + `\"}"}}`
	}
	errBody := func(status int, typ, code, msg string, h http.Header) modeltest.Reply {
		rep := modeltest.JSON(status, `{"error":{"message":"`+msg+`","type":"`+typ+`","param":null,"code":"`+code+`"}}`)
		for k, v := range h {
			rep.Header[k] = v
		}
		return rep
	}
	switch s {
	case modeltest.RateLimited:
		return errBody(429, "requests", "rate_limit_exceeded", "Rate limit reached for gpt-4o-mini", http.Header{"Retry-After": {"7"}})
	case modeltest.ServerError:
		return errBody(503, "server_error", "", "The server is overloaded or not ready yet.", nil)
	case modeltest.ContextLength:
		return errBody(400, "invalid_request_error", "context_length_exceeded", "This model's maximum context length is 128000 tokens.", nil)
	case modeltest.Unauthorized:
		return errBody(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.", nil)
	}
	if !streamed {
		switch s {
		case modeltest.Text:
			return completion(`{"role":"assistant","content":"Hello, world.","refusal":null}`, "stop")
		case modeltest.ToolCall:
			return completion(`{"role":"assistant","content":null,"tool_calls":[`+call("call_a", "Paris")+`]}`, "tool_calls")
		case modeltest.ParallelToolCalls:
			return completion(`{"role":"assistant","content":null,"tool_calls":[`+call("call_a", "Paris")+`,`+call("call_b", "Lyon")+`]}`, "tool_calls")
		case modeltest.StructuredOutput:
			return completion(`{"role":"assistant","content":"{\"city\":\"Paris\",\"temp_c\":21}","refusal":null}`, "stop")
		}
		t.Errorf("scenario %s asked without streaming", s)
		return modeltest.JSON(500, `{}`)
	}
	usage := ChunkUsage
	switch s {
	case modeltest.Text:
		return modeltest.EventStream(ChunkRole, ChunkContent("Hello, "), ChunkContent("world."), ChunkStop, usage, "[DONE]")
	case modeltest.ToolCall:
		return modeltest.EventStream(ChunkRole, ChunkTool(0, "call_a", "get_weather", ""), ChunkTool(0, "", "", `{"city":`), ChunkTool(0, "", "", `"Paris"}`), ChunkToolStop, usage, "[DONE]")
	case modeltest.ParallelToolCalls:
		return modeltest.EventStream(ChunkRole,
			ChunkTool(0, "call_a", "get_weather", ""), ChunkTool(0, "", "", `{"city":"Paris"}`),
			ChunkTool(1, "call_b", "get_weather", ""), ChunkTool(1, "", "", `{"city":`), ChunkTool(1, "", "", `"Lyon"}`),
			ChunkToolStop, usage, "[DONE]")
	case modeltest.StructuredOutput:
		return modeltest.EventStream(ChunkRole, ChunkContent(`{"city":"Paris",`), ChunkContent(`"temp_c":21}`), ChunkStop, usage, "[DONE]")
	case modeltest.MalformedChunk:
		return modeltest.EventStream(ChunkRole, `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Hel`, "[DONE]")
	case modeltest.TruncatedStream:
		return modeltest.EventStream(ChunkRole, ChunkContent("Hello, "))
	case modeltest.Hang:
		return modeltest.EventStream(ChunkRole, ChunkContent("Hello"))
	case modeltest.StreamError:
		return modeltest.EventStream(ChunkRole, ChunkContent("Hello"),
			`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`)
	}
	t.Errorf("unknown scenario %s", s)
	return modeltest.JSON(500, `{}`)
}

// Usage is what Reply's usage normalises to.
var Usage = model.Usage{InputTokens: 82, OutputTokens: 17, TotalTokens: 99, CacheReadTokens: 64, ReasoningTokens: 5}

// Chunks as OpenAI sends them (whitespace and field order included): the
// role, a stop, a tool-call stop, and the usage chunk of a stream.
const (
	ChunkRole     = `{"id":"chatcmpl-AcD1","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`
	ChunkStop     = `{"id":"chatcmpl-AcD1","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`
	ChunkToolStop = `{"id":"chatcmpl-AcD1","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}`
	ChunkUsage    = `{"id":"chatcmpl-AcD1","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[],"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99,"prompt_tokens_details":{"cached_tokens":64,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":5,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`
)

// ChunkContent is a content delta carrying s.
func ChunkContent(s string) string {
	b, _ := json.Marshal(s)
	return `{"id":"chatcmpl-AcD1","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":` + string(b) + `},"logprobs":null,"finish_reason":null}],"usage":null}`
}

// ChunkTool is a tool-call fragment; id and name are sent only on the first one.
func ChunkTool(index int, id, name, args string) string {
	a, _ := json.Marshal(args)
	head := ""
	if id != "" {
		head = `"id":"` + id + `","type":"function",`
	}
	fn := `"arguments":` + string(a)
	if name != "" {
		fn = `"name":"` + name + `",` + fn
	}
	return `{"id":"chatcmpl-AcD1","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"tool_calls":[{"index":` +
		strconv.Itoa(index) + `,` + head + `"function":{` + fn + `}}]},"logprobs":null,"finish_reason":null}],"usage":null}`
}
