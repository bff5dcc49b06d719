package anthropic

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
)

// ev is one named Messages API event for modeltest.EventStream.
func ev(name, data string) string { return name + "\x00" + data }

func conformanceReply(t *testing.T, s modeltest.Scenario, r *http.Request, body []byte) modeltest.Reply {
	streamed := bytes.Contains(body, []byte(`"stream":true`))
	usage := `"usage":{"input_tokens":472,"cache_creation_input_tokens":12,"cache_read_input_tokens":300,"output_tokens":15}`
	message := func(content, stop string) modeltest.Reply {
		return modeltest.JSON(200, `{"id":"msg_1","type":"message","role":"assistant","model":"`+testModelID+`","content":`+content+`,"stop_reason":"`+stop+`","stop_sequence":null,`+usage+`}`)
	}
	errBody := func(status int, typ, msg string, h http.Header) modeltest.Reply {
		rep := modeltest.JSON(status, `{"type":"error","error":{"type":"`+typ+`","message":"`+msg+`"}}`)
		for k, v := range h {
			rep.Header[k] = v
		}
		return rep
	}
	toolUse := func(id, name, input string) string {
		return `{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}`
	}
	switch s {
	case modeltest.RateLimited:
		return errBody(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", http.Header{"Retry-After": {"7"}})
	case modeltest.ServerError:
		return errBody(529, "overloaded_error", "Overloaded", nil)
	case modeltest.ContextLength:
		return errBody(400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum", nil)
	case modeltest.Unauthorized:
		return errBody(401, "authentication_error", "invalid x-api-key", nil)
	}
	if !streamed {
		switch s {
		case modeltest.Text:
			return message(`[{"type":"text","text":"Hello, world."}]`, "end_turn")
		case modeltest.ToolCall:
			return message(`[`+toolUse("toolu_a", "get_weather", `{"city":"Paris"}`)+`]`, "tool_use")
		case modeltest.ParallelToolCalls:
			return message(`[`+toolUse("toolu_a", "get_weather", `{"city":"Paris"}`)+`,`+toolUse("toolu_b", "get_weather", `{"city":"Lyon"}`)+`]`, "tool_use")
		case modeltest.StructuredOutput:
			return message(`[`+toolUse("toolu_f", "weather", `{"city":"Paris","temp_c":21}`)+`]`, "tool_use")
		}
		t.Errorf("scenario %s asked without streaming", s)
		return modeltest.JSON(500, `{}`)
	}
	start := ev("message_start", frameStart)
	end := []string{ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`), ev("message_stop", frameStop)}
	toolEnd := []string{ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":15}}`), ev("message_stop", frameStop)}
	bs := func(i, block string) string {
		return ev("content_block_start", `{"type":"content_block_start","index":`+i+`,"content_block":`+block+`}`)
	}
	text := func(i, s string) string {
		return ev("content_block_delta", `{"type":"content_block_delta","index":`+i+`,"delta":{"type":"text_delta","text":"`+s+`"}}`)
	}
	args := func(i, s string) string {
		return ev("content_block_delta", `{"type":"content_block_delta","index":`+i+`,"delta":{"type":"input_json_delta","partial_json":"`+s+`"}}`)
	}
	stop := func(i string) string {
		return ev("content_block_stop", `{"type":"content_block_stop","index":`+i+`}`)
	}
	cat := func(parts []string, tail []string) []string { return append(parts, tail...) }
	switch s {
	case modeltest.Text:
		return modeltest.EventStream(cat([]string{start, bs("0", `{"type":"text","text":""}`), text("0", "Hello, "), text("0", "world."), stop("0")}, end)...)
	case modeltest.ToolCall:
		return modeltest.EventStream(cat([]string{start, bs("0", toolUse("toolu_a", "get_weather", `{}`)), args("0", `{\"city\":`), args("0", `\"Paris\"}`), stop("0")}, toolEnd)...)
	case modeltest.ParallelToolCalls:
		return modeltest.EventStream(cat([]string{start,
			bs("0", toolUse("toolu_a", "get_weather", `{}`)), args("0", `{\"city\":\"Paris\"}`), stop("0"),
			bs("1", toolUse("toolu_b", "get_weather", `{}`)), args("1", `{\"city\":`), args("1", `\"Lyon\"}`), stop("1")}, toolEnd)...)
	case modeltest.StructuredOutput:
		return modeltest.EventStream(cat([]string{start, bs("0", toolUse("toolu_f", "weather", `{}`)), args("0", `{\"city\":\"Paris\",`), args("0", `\"temp_c\":21}`), stop("0")}, toolEnd)...)
	case modeltest.MalformedChunk:
		return modeltest.EventStream(start, ev("content_block_start", `{"type":"content_block_start","index":0,"content_bl`))
	case modeltest.TruncatedStream:
		return modeltest.EventStream(start, bs("0", `{"type":"text","text":""}`), text("0", "Hello, "))
	case modeltest.Hang:
		return modeltest.EventStream(start, bs("0", `{"type":"text","text":""}`), text("0", "Hello"))
	case modeltest.StreamError:
		return modeltest.EventStream(start, bs("0", `{"type":"text","text":""}`), text("0", "Hello"),
			ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	}
	t.Errorf("unknown scenario %s", s)
	return modeltest.JSON(500, `{}`)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	modeltest.Run(t, modeltest.Provider{
		New: func(t *testing.T, base string, client *http.Client) model.Model {
			m, err := New(Config{APIKey: "sk-ant-test", BaseURL: base, Model: "claude-sonnet-4-5", HTTPClient: client})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		Reply: conformanceReply,
		// Anthropic's input_tokens already leave the cache out (Agno's reading).
		Usage: model.Usage{InputTokens: 472, OutputTokens: 15, TotalTokens: 487, CacheReadTokens: 300, CacheWriteTokens: 12},
	})
}
