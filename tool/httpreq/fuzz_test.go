package httpreq

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzResponseMarshalJSON: whatever a server answers, the tool's result is
// JSON, and its body reads back as the body received: the same text, or,
// for a JSON answer shown as JSON, the same JSON value (do has made the
// body valid UTF-8 before).
func FuzzResponseMarshalJSON(f *testing.F) {
	f.Add(`{"a":1}`, "application/json", false)
	f.Add(`{"a":`, "application/json; charset=utf-8", true)
	f.Add(" [1, 2] ", "application/json", false)
	f.Add("<html>\x00\u2028</html>", "text/html", false)
	f.Add(`"\ud800"`, "application/json", false)
	f.Fuzz(func(t *testing.T, body, contentType string, truncated bool) {
		body = strings.ToValidUTF8(body, "\uFFFD") // as do leaves it
		r := Response{StatusCode: 200, Headers: map[string]string{"Content-Type": contentType}, Body: body, Truncated: truncated}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var back struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s is not JSON: %v", b, err)
		}
		var s string
		if json.Unmarshal(back.Body, &s) == nil && back.Body[0] == '"' && s == body {
			return // shown as text
		}
		var want bytes.Buffer
		if json.Compact(&want, []byte(body)) != nil || !bytes.Equal(want.Bytes(), back.Body) {
			t.Fatalf("body %q came back as %s", body, back.Body)
		}
	})
}
