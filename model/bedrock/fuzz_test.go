package bedrock

import (
	"bytes"
	"testing"
)

// FuzzDecodeStream: no byte sequence panics the event-stream decoder, and a
// stream ending without error reached messageStop.
func FuzzDecodeStream(f *testing.F) {
	f.Add(bytes.Join([][]byte{msgStart(), textDelta("0", "Hi"), blockStop("0"), msgStop("end_turn"), metadata()}, nil))
	f.Add(bytes.Join([][]byte{toolStart("0", "t", "f"), toolDelta("0", "{}"), msgStop("tool_use")}, nil))
	f.Add(bytes.Join([][]byte{toolStart("0", "t", "f"), blockStop("0"), toolStart("1", "s", "weather"), toolDelta("1", ""), blockStop("1"), blockStop("1"), msgStop("tool_use")}, nil))
	f.Add(bytes.Join([][]byte{exceptionFrame("throttlingException", "x")}, nil))
	f.Add(frame("contentBlockDelta", `{"delta":{"reasoningContent":{"redactedContent":"AAA="}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		stopped := false
		for c, err := range decodeStream(bytes.NewReader(body), "weather") {
			if err != nil {
				return
			}
			if c.StopReason != "" {
				stopped = true
			}
		}
		if !stopped {
			t.Fatalf("stream ended cleanly without messageStop")
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"output":{"message":{"content":[{"text":"a"},{"toolUse":{"toolUseId":"x","name":"weather","input":{}}},{"reasoningContent":{"redactedContent":"AA=="}}]}},"usage":{}}`))
	f.Add([]byte(`{"output":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeResponse(data, "weather")
		if err == nil && r == nil {
			t.Fatal("no response and no error")
		}
	})
}
