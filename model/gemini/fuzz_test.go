package gemini

import (
	"strings"
	"testing"
)

// FuzzDecodeStream: no stream body can panic the decoder, and a stream that
// yields no error has seen a finishReason.
func FuzzDecodeStream(f *testing.F) {
	f.Add("data: " + respJSON(textPart("Hello"), "STOP", true) + "\n\n")
	f.Add("data: " + respJSON(callPart("f", `{"a":1}`, "c2ln"), "", false) + "\r\n\r\ndata: " + respJSON(`{"text":"t","thought":true}`, "STOP", true) + "\r\n\r\n")
	f.Add(`data: {"error":{"code":429,"message":"x"}}` + "\n\n")
	f.Add(`data: {"candidates":[]}` + "\n\n" + `data: {"promptFeedback":{"blockReason":"SAFETY"}}` + "\n\n")
	f.Add("data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":null}}]}}]}\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		finished := false
		for c, err := range decodeStream(strings.NewReader(body)) {
			if err != nil {
				return
			}
			if c.StopReason != "" {
				finished = true
			}
		}
		if !finished {
			t.Fatalf("stream ended without error and without a finish reason: %q", body)
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(respJSON(textPart("Hello"), "STOP", true)))
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":[1]}}]}}]}`))
	f.Add([]byte(`{"error":{"code":500}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeResponse(data)
		if err == nil && r == nil {
			t.Fatal("no response and no error")
		}
	})
}
