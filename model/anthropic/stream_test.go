package anthropic

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
)

const (
	sigFixture      = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds2M1bY/nH0JIDfGYcoIN3tXn+W7K5aWn/qrm"
	redactedFixture = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj"
)

func TestStream_DecodesWireFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		body  string
		want  model.Message
		stop  string
		usage model.Usage
		// toolIndices are the ToolCallDelta indices seen, in order of first use.
		toolIndices []int
		// argFragments counts deltas carrying argument text; a call without
		// input_json_delta gets one "{}" fragment when its block stops.
		argFragments int
	}{
		{
			name: "text with pings and an unknown event",
			body: sseStream(msgStart(),
				blockStart(0, `{"type":"text","text":""}`), ping(),
				textDelta(0, "Hello"), ping(), textDelta(0, ", world"),
				sseEvent("content_block_hologram", `{"type":"content_block_hologram","index":0}`),
				blockStop(0), msgDelta("end_turn", 15), msgStop()),
			want:  model.Message{Role: model.RoleAssistant, Content: "Hello, world"},
			stop:  "end_turn",
			usage: model.Usage{InputTokens: 472, OutputTokens: 15, TotalTokens: 487, CacheReadTokens: 300, CacheWriteTokens: 12},
		},
		{
			name: "tool_use input arrives in several fragments",
			body: sseStream(msgStart(),
				blockStart(0, `{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}`),
				jsonDelta(0, ""), jsonDelta(0, `{"location": "San Fra`), jsonDelta(0, `ncisco, CA", "unit": "fah`), jsonDelta(0, `renheit"}`),
				blockStop(0), msgDelta("tool_use", 89), msgStop()),
			want: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather", Arguments: `{"location": "San Francisco, CA", "unit": "fahrenheit"}`},
			}},
			stop:         "tool_use",
			usage:        model.Usage{InputTokens: 472, OutputTokens: 89, TotalTokens: 561, CacheReadTokens: 300, CacheWriteTokens: 12},
			toolIndices:  []int{0},
			argFragments: 3,
		},
		{
			name: "two tool_use blocks after text get dense indices",
			body: sseStream(msgStart(),
				blockStart(0, `{"type":"text","text":""}`), textDelta(0, "Let me check both."), blockStop(0),
				blockStart(1, `{"type":"tool_use","id":"toolu_A","name":"get_weather","input":{}}`),
				jsonDelta(1, `{"city":`), jsonDelta(1, `"Paris"}`), blockStop(1),
				blockStart(2, `{"type":"tool_use","id":"toolu_B","name":"get_time","input":{}}`), blockStop(2),
				msgDelta("tool_use", 120), msgStop()),
			want: model.Message{Role: model.RoleAssistant, Content: "Let me check both.", ToolCalls: []model.ToolCall{
				{ID: "toolu_A", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "toolu_B", Name: "get_time", Arguments: `{}`},
			}},
			stop:         "tool_use",
			usage:        model.Usage{InputTokens: 472, OutputTokens: 120, TotalTokens: 592, CacheReadTokens: 300, CacheWriteTokens: 12},
			toolIndices:  []int{0, 1},
			argFragments: 3,
		},
		{
			name: "extended thinking with signature then text",
			body: sseStream(msgStart(),
				blockStart(0, `{"type":"thinking","thinking":""}`),
				blockDelta(0, `{"type":"thinking_delta","thinking":"Let me solve this step by step:\n\n1. "}`),
				blockDelta(0, `{"type":"thinking_delta","thinking":"27 * 453 = 12231"}`),
				blockDelta(0, `{"type":"signature_delta","signature":"`+sigFixture+`"}`),
				blockStop(0),
				blockStart(1, `{"type":"redacted_thinking","data":"`+redactedFixture+`"}`), blockStop(1),
				blockStart(2, `{"type":"text","text":""}`), textDelta(2, "27 * 453 = 12,231"), blockStop(2),
				msgDelta("end_turn", 230), msgStop()),
			want: model.Message{
				Role: model.RoleAssistant, Content: "27 * 453 = 12,231",
				ReasoningContent: "Let me solve this step by step:\n\n1. 27 * 453 = 12231",
				Thinking: []model.ThinkingBlock{
					{Type: "thinking", Thinking: "Let me solve this step by step:\n\n1. 27 * 453 = 12231", Signature: sigFixture},
					{Type: "redacted_thinking", Data: redactedFixture},
				},
			},
			stop:  "end_turn",
			usage: model.Usage{InputTokens: 472, OutputTokens: 230, TotalTokens: 702, CacheReadTokens: 300, CacheWriteTokens: 12},
		},
		{
			name: "message_delta usage overrides message_start, but for a zero (cumulative counts)",
			body: sseStream(msgStart(),
				blockStart(0, `{"type":"text","text":""}`), textDelta(0, "ok"), blockStop(0),
				sseEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"input_tokens":500,"cache_creation_input_tokens":0,"cache_read_input_tokens":310,"output_tokens":4096}}`),
				msgStop()),
			want:  model.Message{Role: model.RoleAssistant, Content: "ok"},
			stop:  "max_tokens",
			usage: model.Usage{InputTokens: 500, OutputTokens: 4096, TotalTokens: 4596, CacheReadTokens: 310, CacheWriteTokens: 12},
		},
		{
			name: "server tool blocks and citations are not tool calls",
			body: sseStream(msgStart(),
				blockStart(0, `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}`),
				jsonDelta(0, `{"query": "weather`), jsonDelta(0, ` Paris"}`), blockStop(0),
				blockStart(1, `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://example.com","title":"Paris"}]}`), blockStop(1),
				blockStart(2, `{"type":"text","text":""}`), textDelta(2, "Sunny."),
				blockDelta(2, `{"type":"citations_delta","citation":{"type":"web_search_result_location","url":"https://example.com","cited_text":"Sunny"}}`),
				blockStop(2), msgDelta("end_turn", 40), msgStop()),
			want:  model.Message{Role: model.RoleAssistant, Content: "Sunny."},
			stop:  "end_turn",
			usage: model.Usage{InputTokens: 472, OutputTokens: 40, TotalTokens: 512, CacheReadTokens: 300, CacheWriteTokens: 12},
		},
		{
			name: "crlf framing",
			body: strings.ReplaceAll(sseStream(msgStart(),
				blockStart(0, `{"type":"text","text":""}`), textDelta(0, "hi"), blockStop(0),
				msgDelta("end_turn", 3), msgStop()), "\n", "\r\n"),
			want:  model.Message{Role: model.RoleAssistant, Content: "hi"},
			stop:  "end_turn",
			usage: model.Usage{InputTokens: 472, OutputTokens: 3, TotalTokens: 475, CacheReadTokens: 300, CacheWriteTokens: 12},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, sseReply(tc.body))
			chunks, resp, err := drain(t, api.model(t), userReq("hi"))
			if err != nil {
				t.Fatalf("stream error: %v", err)
			}
			if !reflect.DeepEqual(resp.Message, tc.want) {
				t.Errorf("message:\n got %+v\nwant %+v", resp.Message, tc.want)
			}
			if resp.StopReason != tc.stop {
				t.Errorf("stop reason = %q, want %q", resp.StopReason, tc.stop)
			}
			if resp.Usage != tc.usage {
				t.Errorf("usage = %+v, want %+v", resp.Usage, tc.usage)
			}
			if resp.ModelID != testModelID {
				t.Errorf("model id = %q, want %q", resp.ModelID, testModelID)
			}
			var indices []int
			seen := map[int]bool{}
			fragments := 0
			for _, c := range chunks {
				for _, d := range c.ToolCalls {
					if !seen[d.Index] {
						seen[d.Index] = true
						indices = append(indices, d.Index)
					}
					if d.Arguments != "" {
						fragments++
					}
				}
			}
			if !reflect.DeepEqual(indices, tc.toolIndices) {
				t.Errorf("tool call indices = %v, want %v", indices, tc.toolIndices)
			}
			if fragments != tc.argFragments {
				t.Errorf("argument fragments = %d, want %d", fragments, tc.argFragments)
			}
			if got := api.lastBody()["stream"]; got != true {
				t.Errorf("request stream = %v, want true", got)
			}
		})
	}
}

func TestStream_Errors(t *testing.T) {
	t.Parallel()
	textSoFar := sseStream(msgStart(), blockStart(0, `{"type":"text","text":""}`), textDelta(0, "Hel"))
	tests := []struct {
		name string
		body string
		kind error
		// provider is set when the error must be a *model.ProviderError.
		provider bool
	}{
		{"overloaded error event mid-stream", textSoFar + sseEvent("error", `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`), model.ErrServer, true},
		{"api_error event", textSoFar + sseEvent("error", `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`), model.ErrServer, true},
		{"rate limit error event", textSoFar + sseEvent("error", `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`), model.ErrRateLimit, true},
		{"authentication error event", textSoFar + sseEvent("error", `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`), model.ErrAuth, true},
		{"billing error event", sseEvent("error", `{"type":"error","error":{"type":"billing_error","message":"Billing error"}}`), model.ErrQuotaExceeded, true},
		{"prompt too long event", sseEvent("error", `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210345 tokens > 200000 maximum"}}`), model.ErrContextLength, true},
		{"invalid request event", sseEvent("error", `{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}`), model.ErrBadRequest, true},
		{"truncated mid-event", textSoFar + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"del", model.ErrMalformedResponse, false},
		{"ends without message_stop", textSoFar + blockStop(0) + msgDelta("end_turn", 4), model.ErrMalformedResponse, false},
		{"empty body", "", model.ErrMalformedResponse, false},
		{"garbage data line", textSoFar + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}}garbage\n\n", model.ErrMalformedResponse, false},
		{"data that is not JSON at all", textSoFar + "data: <html>502 Bad Gateway</html>\n\n", model.ErrMalformedResponse, false},
		{"field of the wrong type", textSoFar + sseEvent("content_block_delta", `{"type":"content_block_delta","index":"zero","delta":{"type":"text_delta","text":"x"}}`), model.ErrMalformedResponse, false},
		{"input_json_delta for a block never started", textSoFar + jsonDelta(7, `{"a":1}`), model.ErrMalformedResponse, false},
		{"content_block_delta without delta", textSoFar + sseEvent("content_block_delta", `{"type":"content_block_delta","index":0}`), model.ErrMalformedResponse, false},
		{"content_block_start without block", msgStart() + sseEvent("content_block_start", `{"type":"content_block_start","index":0}`), model.ErrMalformedResponse, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, sseReply(tc.body))
			_, resp, err := drain(t, api.model(t), userReq("hi"))
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want %v", err, tc.kind)
			}
			var pe *model.ProviderError
			if got := errors.As(err, &pe); got != tc.provider {
				t.Fatalf("errors.As ProviderError = %v, want %v (err %v)", got, tc.provider, err)
			}
			if pe != nil && pe.Provider != "Anthropic" {
				t.Errorf("provider = %q", pe.Provider)
			}
			if strings.Contains(tc.body, `"Hel"`) && resp.Message.Content != "Hel" {
				t.Errorf("content before the error = %q, want %q", resp.Message.Content, "Hel")
			}
		})
	}
}

func TestStream_BreakClosesConnection(t *testing.T) {
	t.Parallel()
	closed := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		_, _ = w.Write([]byte(msgStart() + blockStart(0, `{"type":"text","text":""}`) + textDelta(0, "first")))
		w.(http.Flusher).Flush()
		// Keep streaming until the client goes away.
		for {
			select {
			case <-r.Context().Done():
				close(closed)
				return
			case <-time.After(5 * time.Millisecond):
				if _, err := w.Write([]byte(ping())); err != nil {
					close(closed)
					return
				}
				w.(http.Flusher).Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	m, err := New(Config{APIKey: "k", BaseURL: srv.URL, Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	for c, err := range m.Stream(context.Background(), userReq("hi")) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Content == "first" {
			break
		}
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("server still streaming after the consumer broke out of the loop")
	}
}

func TestStream_CancelledContextIsNotMalformed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		_, _ = w.Write([]byte(msgStart() + blockStart(0, `{"type":"text","text":""}`) + textDelta(0, "Hel")))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	m, err := New(Config{APIKey: "k", BaseURL: srv.URL, Model: "claude-sonnet-4-5"})
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
		if c.Content != "" {
			cancel()
		}
	}
	if !errors.Is(got, context.Canceled) || errors.Is(got, model.ErrMalformedResponse) {
		t.Fatalf("err = %v, want context.Canceled only", got)
	}
}

// A stream whose only tool call is the structured-output tool yields the JSON
// as Content and reads as a final answer.
func TestStream_StructuredOutputViaForcedTool(t *testing.T) {
	t.Parallel()
	body := sseStream(msgStart(),
		blockStart(0, `{"type":"tool_use","id":"toolu_S","name":"weather_report","input":{}}`),
		jsonDelta(0, `{"city":"Paris",`), jsonDelta(0, `"temp_c":21}`), blockStop(0),
		msgDelta("tool_use", 30), msgStop())
	api := newFakeAPI(t, sseReply(body))
	req := userReq("weather in Paris?")
	req.ResponseFormat = &model.ResponseFormat{Name: "weather report", Schema: []byte(`{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number"}}}`)}
	_, resp, err := drain(t, api.model(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != `{"city":"Paris","temp_c":21}` || len(resp.Message.ToolCalls) != 0 {
		t.Errorf("message = %+v, want the tool input as content and no tool calls", resp.Message)
	}
	if resp.StopReason != "end_turn" {
		t.Errorf("stop reason = %q, want end_turn", resp.StopReason)
	}
	body2 := api.lastBody()
	if got := jsonOf(t, body2["tool_choice"]); got != `{"name":"weather_report","type":"tool"}` {
		t.Errorf("tool_choice = %s", got)
	}
	if got := jsonOf(t, body2["tools"]); !strings.Contains(got, `"name":"weather_report"`) || !strings.Contains(got, `"input_schema":{"properties":{"city"`) {
		t.Errorf("tools = %s", got)
	}
}

// With thinking the model is only asked (tool_choice auto); prose it writes
// before calling the structured tool is not part of the answer.
func TestStream_StructuredOutputDropsProseBeforeTool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
	}{
		{"tool called", sseStream(msgStart(),
			blockStart(0, `{"type":"text","text":""}`), textDelta(0, "Here is the report."), blockStop(0),
			blockStart(1, `{"type":"tool_use","id":"toolu_S","name":"report","input":{}}`), jsonDelta(1, `{"ok":true}`), blockStop(1),
			msgDelta("tool_use", 30), msgStop()), `{"ok":true}`},
		{"tool not called", sseStream(msgStart(),
			blockStart(0, `{"type":"text","text":""}`), textDelta(0, "I cannot "), textDelta(0, "answer."), blockStop(0),
			msgDelta("end_turn", 30), msgStop()), "I cannot answer."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, sseReply(tc.body))
			req := userReq("report")
			req.ThinkingBudget = 2048
			req.ResponseFormat = &model.ResponseFormat{Name: "report", Schema: []byte(`{"type":"object"}`)}
			_, resp, err := drain(t, api.model(t), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != tc.want {
				t.Errorf("content = %q, want %q", resp.Message.Content, tc.want)
			}
			body := api.lastBody()
			if got := jsonOf(t, body["tool_choice"]); got != `{"type":"auto"}` {
				t.Errorf("tool_choice = %s, want auto (thinking forbids forcing a tool)", got)
			}
			if sys, _ := body["system"].(string); !strings.Contains(sys, "report tool") {
				t.Errorf("system = %q, want an instruction to call the report tool", sys)
			}
		})
	}
}

func TestStream_ToolIndicesSortedAcrossBlocks(t *testing.T) {
	t.Parallel()
	// Anthropic block indices 3 and 5 (text and thinking before) must become 0 and 1.
	body := sseStream(msgStart(),
		blockStart(0, `{"type":"thinking","thinking":""}`), blockDelta(0, `{"type":"signature_delta","signature":"s"}`), blockStop(0),
		blockStart(1, `{"type":"text","text":"a"}`), blockStop(1),
		blockStart(2, `{"type":"text","text":"b"}`), blockStop(2),
		blockStart(3, `{"type":"tool_use","id":"t1","name":"x","input":{}}`), jsonDelta(3, `{}`), blockStop(3),
		blockStart(4, `{"type":"text","text":"c"}`), blockStop(4),
		blockStart(5, `{"type":"tool_use","id":"t2","name":"y","input":{}}`), jsonDelta(5, `{"n":1}`), blockStop(5),
		msgDelta("tool_use", 9), msgStop())
	api := newFakeAPI(t, sseReply(body))
	chunks, resp, err := drain(t, api.model(t), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for _, c := range chunks {
		for _, d := range c.ToolCalls {
			idx = append(idx, d.Index)
		}
	}
	sort.Ints(idx)
	if want := []int{0, 0, 1, 1}; !reflect.DeepEqual(idx, want) {
		t.Errorf("indices = %v, want %v", idx, want)
	}
	if resp.Message.Content != "abc" || len(resp.Message.ToolCalls) != 2 || resp.Message.ToolCalls[1].Arguments != `{"n":1}` {
		t.Errorf("message = %+v", resp.Message)
	}
}

// Usage on message_delta is cumulative, so a count never goes down: some
// Anthropic-compatible servers (SGLang) send input_tokens 0 there, and
// others 0 on message_start and the real count on message_delta. The
// stream keeps the count each reports last unless it falls to zero.
func TestStream_UsageCountsNeverFallBack(t *testing.T) {
	t.Parallel()
	text := sseStream(blockStart(0, `{"type":"text","text":""}`), textDelta(0, "Hi."), blockStop(0))
	for name, tc := range map[string]struct {
		start, delta string
		want         model.Usage
	}{
		"zeros on message_delta": {frameStart,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":45}}`,
			model.Usage{InputTokens: 472, OutputTokens: 45, TotalTokens: 517, CacheReadTokens: 300, CacheWriteTokens: 12}},
		"zeros on message_start": {`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":0,"output_tokens":0}}}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":123,"output_tokens":45}}`,
			model.Usage{InputTokens: 123, OutputTokens: 45, TotalTokens: 168}},
	} {
		api := newFakeAPI(t, sseReply(sseStream(sseEvent("message_start", tc.start), text, sseEvent("message_delta", tc.delta), msgStop())))
		_, resp, err := drain(t, api.model(t), userReq("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage != tc.want {
			t.Errorf("%s: usage %+v, want %+v", name, resp.Usage, tc.want)
		}
	}
}
