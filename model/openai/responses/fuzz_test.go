package responses

import (
	"strings"
	"testing"
)

// FuzzDecodeStream: no body panics the decoder; a stream ending without an
// error reached a terminal event (it carries the stop reason).
func FuzzDecodeStream(f *testing.F) {
	f.Add(sseBody(created, textDelta("Hi"), completed(message("Hi"))))
	f.Add(sseBody(itemAdded("0", parisCall), argsDelta("0", "{}"), itemDone("0", reasoningItem), completed(parisCall)))
	f.Add(sseBody(itemAdded("0", `{"type":"function_call","call_id":"c","name":"f","arguments":""}`), itemDone("0", parisCall), itemDone("0", parisCall), completed(parisCall)))
	f.Add(sseBody(ev("error", `"code":500,"message":"x"`)))
	f.Add(sseBody(ev("response.completed", `"response":null`)))
	m, _ := New(Config{APIKey: "k", BaseURL: "http://127.0.0.1:1", Model: "o4-mini"})
	f.Fuzz(func(t *testing.T, body string) {
		stopped := false
		for c, err := range m.decodeStream(strings.NewReader(body)) {
			if err != nil {
				return
			}
			if c.StopReason != "" {
				stopped = true
			}
		}
		if !stopped {
			t.Fatalf("stream ended cleanly without a terminal event: %q", body)
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(responseObj("completed", reasoningItem, message("x"), parisCall)))
	f.Add([]byte(`{"status":"failed","error":{"code":1}}`))
	f.Add([]byte(`{"output":[1]}`))
	m, _ := New(Config{APIKey: "k", BaseURL: "http://127.0.0.1:1", Model: "o4-mini"})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := m.decodeResponse(data)
		if err == nil && r == nil {
			t.Fatal("no response and no error")
		}
	})
}
