package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
)

const invokeToolUse = `{"id":"msg_01Aq9w938a90dw8q","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"thinking","thinking":"The user wants the weather.","signature":"` + sigFixture + `"},{"type":"redacted_thinking","data":"` + redactedFixture + `"},{"type":"text","text":"I'll check "},{"type":"text","text":"the weather."},{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"location":"San Francisco, CA"}},{"type":"tool_use","id":"toolu_02","name":"get_time","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":7,"cache_read_input_tokens":1800,"output_tokens":503}}`

func TestInvoke_DecodesMessage(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, jsonReply(200, invokeToolUse))
	resp, err := api.model(t).Invoke(context.Background(), userReq("weather?"))
	if err != nil {
		t.Fatal(err)
	}
	want := &model.Response{
		Message: model.Message{
			Role:             model.RoleAssistant,
			Content:          "I'll check the weather.",
			ReasoningContent: "The user wants the weather.",
			Thinking: []model.ThinkingBlock{
				{Type: "thinking", Thinking: "The user wants the weather.", Signature: sigFixture},
				{Type: "redacted_thinking", Data: redactedFixture},
			},
			ToolCalls: []model.ToolCall{
				{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Arguments: `{"location":"San Francisco, CA"}`},
				{ID: "toolu_02", Name: "get_time", Arguments: `{}`},
			},
		},
		Usage:      model.Usage{InputTokens: 2095, OutputTokens: 503, TotalTokens: 2598, CacheReadTokens: 1800, CacheWriteTokens: 7},
		StopReason: "tool_use",
		ModelID:    testModelID,
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response:\n got %+v\nwant %+v", resp, want)
	}
	if _, ok := api.lastBody()["stream"]; ok {
		t.Error("non-streaming request carries a stream field")
	}
}

func TestInvoke_SendsHeadersToMessagesEndpoint(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, jsonReply(200, `{"type":"message","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`))
	if _, err := api.model(t).Invoke(context.Background(), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	r := api.requests()[0]
	if r.path != "/v1/messages" {
		t.Errorf("path = %q", r.path)
	}
	for name, want := range map[string]string{
		"x-api-key":         "sk-ant-test",
		"anthropic-version": "2023-06-01",
		"anthropic-beta":    "interleaved-thinking-2025-05-14",
		"content-type":      "application/json",
	} {
		if got := r.header.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
}

func TestInvoke_StructuredOutputViaForcedTool(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, jsonReply(200, `{"type":"message","model":"m","content":[{"type":"tool_use","id":"toolu_S","name":"city","input":{"name":"Paris","population":2102650}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":20}}`))
	req := userReq("facts about Paris")
	req.ResponseFormat = &model.ResponseFormat{Name: "city", Schema: []byte(`{"type":"object"}`)}
	resp, err := api.model(t).Invoke(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != `{"name":"Paris","population":2102650}` || resp.Message.ToolCalls != nil || resp.StopReason != "end_turn" {
		t.Errorf("response = %+v, want the tool input as content, no tool calls, end_turn", resp)
	}
}

func TestInvoke_MalformedBody(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body string }{
		{"not JSON", `<html>oops</html>`},
		{"truncated JSON", `{"type":"message","content":[{"type":"text","te`},
		{"JSON without a message", `{"hello":"world"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, jsonReply(200, tc.body))
			_, err := api.model(t).Invoke(context.Background(), userReq("hi"))
			if !errors.Is(err, model.ErrMalformedResponse) {
				t.Fatalf("err = %v, want ErrMalformedResponse", err)
			}
		})
	}
}

// Error answers are classified the same way for Invoke and Stream.
func TestHTTPErrors_AreClassified(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		reply      reply
		kind       error
		retryAfter time.Duration
		message    string
	}{
		{"401 invalid key", jsonReply(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`), model.ErrAuth, 0, "invalid x-api-key"},
		{"403 permission", jsonReply(403, `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`), model.ErrAuth, 0, "permission_error"},
		{"429 with retry-after", reply{status: 429, header: map[string]string{"content-type": "application/json", "retry-after": "7"},
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`}, model.ErrRateLimit, 7 * time.Second, "rate_limit_error"},
		{"529 overloaded", jsonReply(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), model.ErrServer, 0, "Overloaded"},
		{"500 api error", jsonReply(500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`), model.ErrServer, 0, "api_error"},
		{"502 from a proxy", reply{status: 502, body: "<html><body>502 Bad Gateway</body></html>"}, model.ErrServer, 0, "502 Bad Gateway"},
		{"400 prompt too long", jsonReply(400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210345 tokens > 200000 maximum"}}`), model.ErrContextLength, 0, "prompt is too long"},
		{"400 invalid request", jsonReply(400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`), model.ErrBadRequest, 0, "max_tokens: Field required"},
		{"404 empty body", reply{status: 404}, model.ErrBadRequest, 0, "Not Found"},
	}
	for _, tc := range tests {
		for _, mode := range []string{"invoke", "stream"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				api := newFakeAPI(t, tc.reply)
				m := api.model(t)
				var err error
				if mode == "invoke" {
					_, err = m.Invoke(context.Background(), userReq("hi"))
				} else {
					var chunks []*model.Chunk
					chunks, _, err = drain(t, m, userReq("hi"))
					if len(chunks) != 0 {
						t.Errorf("got %d chunks before the error", len(chunks))
					}
				}
				var pe *model.ProviderError
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want *model.ProviderError", err)
				}
				if !errors.Is(err, tc.kind) || pe.StatusCode != tc.reply.status || pe.RetryAfter != tc.retryAfter {
					t.Errorf("got kind %v status %d retry-after %v, want %v %d %v", pe.Kind, pe.StatusCode, pe.RetryAfter, tc.kind, tc.reply.status, tc.retryAfter)
				}
				if !strings.Contains(pe.Message, tc.message) {
					t.Errorf("message = %q, want it to contain %q", pe.Message, tc.message)
				}
			})
		}
	}
}

// A 429 with retry-after is retried by model.WithRetry, which waits the
// provider's delay (capped by MaxDelay) rather than its own tiny backoff.
func TestWithRetry_RetriesRateLimitThenSucceeds(t *testing.T) {
	t.Parallel()
	const maxDelay = 40 * time.Millisecond
	limited := reply{status: 429, header: map[string]string{"content-type": "application/json", "retry-after": "1"},
		body: `{"type":"error","error":{"type":"rate_limit_error","message":"rate limited"}}`}
	tests := []struct {
		name string
		ok   reply
		run  func(model.Model) (string, error)
	}{
		{"invoke", jsonReply(200, `{"type":"message","model":"m","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`),
			func(m model.Model) (string, error) {
				resp, err := m.Invoke(context.Background(), userReq("hi"))
				if err != nil {
					return "", err
				}
				return resp.Message.Content, nil
			}},
		{"stream", sseReply(sseStream(msgStart(), blockStart(0, `{"type":"text","text":""}`), textDelta(0, "done"), blockStop(0), msgDelta("end_turn", 2), msgStop())),
			func(m model.Model) (string, error) {
				var acc model.Accumulator
				for c, err := range m.Stream(context.Background(), userReq("hi")) {
					if err != nil {
						return "", err
					}
					acc.Add(c)
				}
				return acc.Response().Message.Content, nil
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, limited, tc.ok)
			m := model.WithRetry(api.model(t), model.RetryConfig{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: maxDelay})
			start := time.Now()
			got, err := tc.run(m)
			if err != nil {
				t.Fatal(err)
			}
			if got != "done" {
				t.Errorf("content = %q", got)
			}
			if n := len(api.requests()); n != 2 {
				t.Errorf("requests = %d, want 2 (one 429, one retry)", n)
			}
			if waited := time.Since(start); waited < maxDelay {
				t.Errorf("retried after %v, want at least the capped retry-after %v", waited, maxDelay)
			}
		})
	}
}

func TestWithRetry_DoesNotRetryAuthErrors(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, jsonReply(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
	m := model.WithRetry(api.model(t), model.RetryConfig{MaxAttempts: 3, BaseDelay: time.Millisecond})
	if _, err := m.Invoke(context.Background(), userReq("hi")); !errors.Is(err, model.ErrAuth) {
		t.Fatalf("err = %v", err)
	}
	if n := len(api.requests()); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

// The thinking a streamed answer produced goes back, signed and first, on the
// next request of the tool loop.
func TestStream_ThinkingBlocksRoundTrip(t *testing.T) {
	t.Parallel()
	first := sseStream(msgStart(),
		blockStart(0, `{"type":"thinking","thinking":""}`),
		blockDelta(0, `{"type":"thinking_delta","thinking":"I need the weather."}`),
		blockDelta(0, `{"type":"signature_delta","signature":"`+sigFixture+`"}`), blockStop(0),
		blockStart(1, `{"type":"tool_use","id":"toolu_W","name":"get_weather","input":{}}`),
		jsonDelta(1, `{"city":`), jsonDelta(1, `"Oslo"}`), blockStop(1),
		msgDelta("tool_use", 60), msgStop())
	second := sseStream(msgStart(), blockStart(0, `{"type":"text","text":""}`), textDelta(0, "It is 4C in Oslo."), blockStop(0), msgDelta("end_turn", 9), msgStop())
	api := newFakeAPI(t, sseReply(first), sseReply(second))
	m := api.model(t)
	req := userReq("weather in Oslo?")
	req.ThinkingBudget = 1024
	req.Tools = []model.ToolSpec{{Name: "get_weather"}}

	_, resp, err := drain(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, resp.Message,
		model.Message{Role: model.RoleTool, ToolCallID: "toolu_W", ToolName: "get_weather", Content: "4C"})
	if _, _, err := drain(t, m, req); err != nil {
		t.Fatal(err)
	}
	body := api.lastBody()
	wantAssistant := `{"content":[{"signature":"` + sigFixture + `","thinking":"I need the weather.","type":"thinking"},{"id":"toolu_W","input":{"city":"Oslo"},"name":"get_weather","type":"tool_use"}],"role":"assistant"}`
	if got := jsonOf(t, pick(t, body, "messages.1")); got != wantAssistant {
		t.Errorf("assistant turn sent back:\n got %s\nwant %s", got, wantAssistant)
	}
	if got := jsonOf(t, pick(t, body, "messages.2")); got != `{"content":[{"content":"4C","tool_use_id":"toolu_W","type":"tool_result"}],"role":"user"}` {
		t.Errorf("tool result turn = %s", got)
	}
	if got := jsonOf(t, body["thinking"]); got != `{"budget_tokens":1024,"type":"enabled"}` {
		t.Errorf("thinking = %s", got)
	}
}

// Agno stores Claude's thinking as the message's reasoning_content with the
// signature in provider_data.signature, and a redacted block as
// redacted_reasoning_content: a paused run Agno stored mid tool call is
// continued with its thinking sent back first, as the API wants of the
// last assistant turn when thinking is on.
func TestBuildRequest_AgnoStoredThinkingIsSentBack(t *testing.T) {
	t.Parallel()
	var stored model.Message
	if err := json.Unmarshal([]byte(`{"role":"assistant","content":"","reasoning_content":"I need the weather.",
		"provider_data":{"signature":"`+sigFixture+`"},"redacted_reasoning_content":"EncRedacted==",
		"tool_calls":[{"id":"toolu_W","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]}`), &stored); err != nil {
		t.Fatal(err)
	}
	api := newFakeAPI(t, sseReply(sseStream(msgStart(), blockStart(0, `{"type":"text","text":""}`), textDelta(0, "4C."), blockStop(0), msgDelta("end_turn", 3), msgStop())))
	req := userReq("weather in Oslo?")
	req.ThinkingBudget = 1024
	req.Tools = []model.ToolSpec{{Name: "get_weather"}}
	req.Messages = append(req.Messages, stored, model.Message{Role: model.RoleTool, ToolCallID: "toolu_W", Content: "4C"})
	if _, _, err := drain(t, api.model(t), req); err != nil {
		t.Fatal(err)
	}
	want := `{"content":[{"signature":"` + sigFixture + `","thinking":"I need the weather.","type":"thinking"},{"data":"EncRedacted==","type":"redacted_thinking"},{"id":"toolu_W","input":{"city":"Oslo"},"name":"get_weather","type":"tool_use"}],"role":"assistant"}`
	if got := jsonOf(t, pick(t, api.lastBody(), "messages.1")); got != want {
		t.Errorf("assistant turn sent back:\n got %s\nwant %s", got, want)
	}
}
