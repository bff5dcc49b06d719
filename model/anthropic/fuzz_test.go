package anthropic

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// benchStream is a 100-event text stream: start, block start, ping, 94 deltas,
// block stop, message delta, message stop.
func benchStream() []byte {
	var b strings.Builder
	b.WriteString(msgStart())
	b.WriteString(blockStart(0, `{"type":"text","text":""}`))
	b.WriteString(ping())
	for range 94 {
		b.WriteString(textDelta(0, "token "))
	}
	b.WriteString(blockStop(0))
	b.WriteString(msgDelta("end_turn", 94))
	b.WriteString(msgStop())
	return []byte(b.String())
}

// FuzzStreamDecoder feeds arbitrary bytes as an SSE body. Whatever arrives,
// the decoder must not panic, must end with nil only after message_stop, must
// report failures as a ProviderError or ErrMalformedResponse, and must number
// tool calls densely from 0.
func FuzzStreamDecoder(f *testing.F) {
	seeds := []string{
		string(benchStream()),
		sseStream(msgStart(), blockStart(0, `{"type":"tool_use","id":"t","name":"f","input":{}}`), jsonDelta(0, `{"a":`), jsonDelta(0, `1}`), blockStop(0), msgDelta("tool_use", 3), msgStop()),
		sseStream(msgStart(), blockStart(0, `{"type":"thinking","thinking":""}`), blockDelta(0, `{"type":"thinking_delta","thinking":"hm"}`),
			blockDelta(0, `{"type":"signature_delta","signature":"c2ln"}`), blockStop(0), blockStart(1, `{"type":"redacted_thinking","data":"x"}`), blockStop(1),
			blockStart(2, `{"type":"text","text":""}`), textDelta(2, "hi"), blockStop(2), msgDelta("end_turn", 3), msgStop()),
		sseStream(msgStart(), blockStart(0, `{"type":"tool_use","id":"s","name":"report","input":{}}`), jsonDelta(0, `{}`), blockStop(0), msgDelta("tool_use", 3), msgStop()),
		sseEvent("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"del",
		"data: null\n\ndata: []\n\ndata: {\"type\":\"message_stop\"}\n\n",
		"data: {\"type\":\"content_block_start\",\"index\":-1,\"content_block\":{\"type\":\"tool_use\"}}\r\n\r\ndata: {\"type\":\"content_block_stop\",\"index\":-1}\r\r",
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, structured bool) {
		formatTool := ""
		if structured {
			formatTool = "report"
		}
		var (
			acc  model.Accumulator
			seen = map[int]bool{}
		)
		err := decodeStream(bytes.NewReader(body), formatTool, func(c *model.Chunk, err error) bool {
			if c == nil || err != nil {
				t.Fatalf("yield(%v, %v): the decoder must yield chunks only", c, err)
			}
			for _, d := range c.ToolCalls {
				if !seen[d.Index] {
					if d.Index != len(seen) {
						t.Fatalf("new tool call index %d after %d calls", d.Index, len(seen))
					}
					seen[d.Index] = true
				}
			}
			acc.Add(c)
			return true
		})
		_ = acc.Response()
		if err == nil {
			if !bytes.Contains(body, []byte("message_stop")) {
				t.Fatal("clean end without a message_stop event")
			}
			return
		}
		var pe *model.ProviderError
		if !errors.As(err, &pe) && !errors.Is(err, model.ErrMalformedResponse) {
			t.Fatalf("unclassified error: %v", err)
		}
	})
}

func BenchmarkStreamDecoder100Events(b *testing.B) {
	body := benchStream()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		n := 0
		err := decodeStream(bytes.NewReader(body), "", func(c *model.Chunk, _ error) bool {
			n += len(c.Content)
			return true
		})
		if err != nil || n != 94*len("token ") {
			b.Fatalf("err %v, %d content bytes", err, n)
		}
	}
}

// FuzzDecodeResponse feeds arbitrary bytes as a non-streamed answer, plain
// and in structured mode. The decoder must not panic, must return a
// response or a classified error, and a tool call's arguments are always
// JSON (a missing input is {}).
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(invokeToolUse), false)
	f.Add([]byte(`{"type":"message","content":[{"type":"tool_use","id":"s","name":"report","input":{"a":1}},{"type":"text","text":"x"}],"stop_reason":"tool_use"}`), true)
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), false)
	f.Add([]byte(`{"type":"message","content":[],"stop_reason":"refusal"}`), false)
	f.Add([]byte(`{"content":[{"type":"tool_use","input":null}],"usage":{"input_tokens":null}}`), false)
	f.Fuzz(func(t *testing.T, raw []byte, structured bool) {
		formatTool := ""
		if structured {
			formatTool = "report"
		}
		r, err := decodeResponse(raw, formatTool)
		if err != nil {
			var pe *model.ProviderError
			if !errors.As(err, &pe) && !errors.Is(err, model.ErrMalformedResponse) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if r == nil {
			t.Fatal("no response and no error")
		}
		for _, tc := range r.Message.ToolCalls {
			if tc.Arguments == "" {
				t.Fatalf("tool call with empty arguments: %+v", r.Message.ToolCalls)
			}
		}
	})
}
