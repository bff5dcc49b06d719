package sdkbench

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// A turn as a provider streams it: 40 text deltas, two parallel tool calls in
// fragments, a stop reason and usage. Both clients of a provider read the same
// bytes from the same loopback server, so the difference is the client alone.

func openaiStream() string {
	head := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_1","choices":[`
	var b strings.Builder
	w := func(choice string) { b.WriteString("data: " + head + choice + `],"usage":null}` + "\n\n") }
	w(`{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}`)
	for i := range 40 {
		s, _ := json.Marshal("word" + strconv.Itoa(i) + " ")
		w(`{"index":0,"delta":{"content":` + string(s) + `},"logprobs":null,"finish_reason":null}`)
	}
	for call := range 2 {
		id := `call_` + strconv.Itoa(call)
		w(`{"index":0,"delta":{"tool_calls":[{"index":` + strconv.Itoa(call) + `,"id":"` + id + `","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}`)
		for _, frag := range []string{`{\"city\"`, `: \"Par`, `is\"}`} {
			w(`{"index":0,"delta":{"tool_calls":[{"index":` + strconv.Itoa(call) + `,"function":{"arguments":"` + frag + `"}}]},"logprobs":null,"finish_reason":null}`)
		}
	}
	w(`{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}`)
	b.WriteString("data: " + `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_1","choices":[],"usage":{"prompt_tokens":82,"completion_tokens":57,"total_tokens":139,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":0}}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func anthropicStream() string {
	var b strings.Builder
	ev := func(name, data string) { b.WriteString("event: " + name + "\ndata: " + data + "\n\n") }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":12,"cache_read_input_tokens":300,"output_tokens":2}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for i := range 40 {
		s, _ := json.Marshal("word" + strconv.Itoa(i) + " ")
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(s)+`}}`)
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	for call := 1; call <= 2; call++ {
		i := strconv.Itoa(call)
		ev("content_block_start", `{"type":"content_block_start","index":`+i+`,"content_block":{"type":"tool_use","id":"toolu_`+i+`","name":"get_weather","input":{}}}`)
		for _, frag := range []string{`{\"city\"`, `: \"Par`, `is\"}`} {
			ev("content_block_delta", `{"type":"content_block_delta","index":`+i+`,"delta":{"type":"input_json_delta","partial_json":"`+frag+`"}}`)
		}
		ev("content_block_stop", `{"type":"content_block_stop","index":`+i+`}`)
	}
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":57}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return b.String()
}

// server answers every POST with body as an event stream.
func server(tb testing.TB, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
	tb.Cleanup(srv.Close)
	return srv
}
