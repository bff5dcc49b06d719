package httpreq

import (
	"bytes"
	"encoding/json"
	"mime"
	"strings"
	"testing"
	"unicode/utf8"
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

// FuzzDecodeBody: whatever bytes and Content-Type a server sends, the body
// the model gets is valid UTF-8, and a UTF-8 body is kept as it was (but
// for a cut character at its end when cut).
func FuzzDecodeBody(f *testing.F) {
	f.Add([]byte("caf\xe9"), "text/plain; charset=iso-8859-1", false)
	f.Add([]byte("abc\xe2\x82"), "text/plain; charset=utf-8", true)
	f.Add([]byte("\x93\xfa\x96"), "text/plain; charset=shift_jis", true)
	f.Add([]byte("\xff\xfeh\x00"), "text/plain; charset=utf-16", false)
	f.Add([]byte("x"), "text/plain; charset=", false)
	f.Fuzz(func(t *testing.T, body []byte, ct string, cut bool) {
		got := decodeBody(body, ct, cut)
		if !utf8.ValidString(got) {
			t.Fatalf("decodeBody(%q, %q) = %q, not UTF-8", body, ct, got)
		}
		if _, params, err := mime.ParseMediaType(ct); (err != nil || params["charset"] == "") && utf8.Valid(body) && got != string(body) {
			t.Fatalf("decodeBody(%q, %q) = %q, a UTF-8 body changed", body, ct, got)
		}
	})
}
