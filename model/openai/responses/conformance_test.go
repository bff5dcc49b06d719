package responses

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
)

const usageJSON = `"usage":{"input_tokens":90,"input_tokens_details":{"cached_tokens":40},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":12},"total_tokens":120}`

// Output items as the API sends them.
const (
	reasoningItem = `{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Thinking about Paris."}],"encrypted_content":"gAAAAABenc-1"}`
	parisCall     = `{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_a","name":"get_weather"}`
	lyonCall      = `{"id":"fc_2","type":"function_call","status":"completed","arguments":"{\"city\":\"Lyon\"}","call_id":"call_b","name":"get_weather"}`
)

func message(text string) string {
	b, _ := json.Marshal(text)
	return `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":` + string(b) + `}]}`
}

func responseObj(status string, output ...string) string {
	s := `{"id":"resp_1","object":"response","created_at":1741476542,"status":"` + status + `","error":null,"incomplete_details":null,"model":"o4-mini-2025-04-16","output":[`
	for i, o := range output {
		if i > 0 {
			s += ","
		}
		s += o
	}
	return s + `],"parallel_tool_calls":true,"store":false,` + usageJSON + `}`
}

// ev renders one streamed event with its name, as the API does.
func ev(typ, fields string) string {
	if fields != "" {
		fields = "," + fields
	}
	return typ + "\x00" + `{"type":"` + typ + `"` + fields + `}`
}

func textDelta(s string) string {
	b, _ := json.Marshal(s)
	return ev("response.output_text.delta", `"item_id":"msg_1","output_index":1,"content_index":0,"delta":`+string(b))
}

func argsDelta(index, s string) string {
	b, _ := json.Marshal(s)
	return ev("response.function_call_arguments.delta", `"item_id":"fc","output_index":`+index+`,"delta":`+string(b))
}

func itemAdded(index, item string) string {
	return ev("response.output_item.added", `"output_index":`+index+`,"item":`+item)
}

func itemDone(index, item string) string {
	return ev("response.output_item.done", `"output_index":`+index+`,"item":`+item)
}

func completed(output ...string) string {
	return ev("response.completed", `"response":`+responseObj("completed", output...))
}

var created = ev("response.created", `"response":{"id":"resp_1","object":"response","status":"in_progress","model":"o4-mini-2025-04-16","output":[]}`)

func conformanceReply(t *testing.T, s modeltest.Scenario, r *http.Request, body []byte) modeltest.Reply {
	if r.URL.Path != "/v1/responses" {
		t.Errorf("path %s", r.URL.Path)
	}
	streamed := bytes.Contains(body, []byte(`"stream":true`))
	errBody := func(status int, typ, code, msg string, h http.Header) modeltest.Reply {
		rep := modeltest.JSON(status, `{"error":{"message":"`+msg+`","type":"`+typ+`","param":null,"code":"`+code+`"}}`)
		for k, v := range h {
			rep.Header[k] = v
		}
		return rep
	}
	switch s {
	case modeltest.RateLimited:
		return errBody(429, "requests", "rate_limit_exceeded", "Rate limit reached for o4-mini", http.Header{"Retry-After": {"7"}})
	case modeltest.ServerError:
		return errBody(500, "server_error", "", "The server had an error while processing your request.", nil)
	case modeltest.ContextLength:
		return errBody(400, "invalid_request_error", "context_length_exceeded", "Your input exceeds the context window of this model.", nil)
	case modeltest.Unauthorized:
		return errBody(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.", nil)
	}
	callAdded := func(index, id, name string) string {
		return itemAdded(index, `{"id":"fc_`+index+`","type":"function_call","status":"in_progress","arguments":"","call_id":"`+id+`","name":"`+name+`"}`)
	}
	if !streamed {
		switch s {
		case modeltest.Text:
			return modeltest.JSON(200, responseObj("completed", reasoningItem, message("Hello, world.")))
		case modeltest.ToolCall:
			return modeltest.JSON(200, responseObj("completed", reasoningItem, parisCall))
		case modeltest.ParallelToolCalls:
			return modeltest.JSON(200, responseObj("completed", parisCall, lyonCall))
		case modeltest.StructuredOutput:
			return modeltest.JSON(200, responseObj("completed", message(`{"city":"Paris","temp_c":21}`)))
		}
		t.Errorf("scenario %s asked without streaming", s)
		return modeltest.JSON(500, `{}`)
	}
	switch s {
	case modeltest.Text:
		return modeltest.EventStream(created, itemAdded("0", `{"id":"rs_1","type":"reasoning","summary":[]}`), itemDone("0", reasoningItem),
			itemAdded("1", `{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`),
			textDelta("Hello, "), textDelta("world."), itemDone("1", message("Hello, world.")), completed(reasoningItem, message("Hello, world.")))
	case modeltest.ToolCall:
		return modeltest.EventStream(created, callAdded("0", "call_a", "get_weather"), argsDelta("0", `{"city":`), argsDelta("0", `"Paris"}`),
			itemDone("0", parisCall), completed(parisCall))
	case modeltest.ParallelToolCalls:
		return modeltest.EventStream(created, callAdded("0", "call_a", "get_weather"), argsDelta("0", `{"city":"Paris"}`), itemDone("0", parisCall),
			callAdded("1", "call_b", "get_weather"), argsDelta("1", `{"city":`), argsDelta("1", `"Lyon"}`), itemDone("1", lyonCall), completed(parisCall, lyonCall))
	case modeltest.StructuredOutput:
		return modeltest.EventStream(created, textDelta(`{"city":"Paris",`), textDelta(`"temp_c":21}`), completed(message(`{"city":"Paris","temp_c":21}`)))
	case modeltest.MalformedChunk:
		return modeltest.EventStream(created, `{"type":"response.output_text.delta","delta":"Hel`)
	case modeltest.TruncatedStream:
		return modeltest.EventStream(created, textDelta("Hello, "))
	case modeltest.Hang:
		return modeltest.EventStream(created, textDelta("Hello"))
	case modeltest.StreamError:
		return modeltest.EventStream(created, textDelta("Hello"),
			ev("response.failed", `"response":{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"The server had an error while processing your request."},"output":[]}`))
	}
	t.Errorf("unknown scenario %s", s)
	return modeltest.JSON(500, `{}`)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	modeltest.Run(t, modeltest.Provider{
		New: func(t *testing.T, base string, client *http.Client) model.Model {
			m, err := New(Config{APIKey: "sk-test", BaseURL: base + "/v1", Model: "o4-mini", HTTPClient: client})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		Reply: conformanceReply,
		Usage: model.Usage{InputTokens: 90, OutputTokens: 30, TotalTokens: 120, CacheReadTokens: 40, ReasoningTokens: 12},
	})
}
