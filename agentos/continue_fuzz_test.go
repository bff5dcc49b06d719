package agentos

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzDecodeContinueForm: any body decodes or fails with a 4xx httpError.
func FuzzDecodeContinueForm(f *testing.F) {
	f.Add("application/x-www-form-urlencoded", `tools=[{"tool_call_id":"c1","confirmed":true}]&stream=false`)
	f.Add("application/x-www-form-urlencoded", `requirements=[{"id":"c1","tool_execution":{"tool_call_id":"c1","confirmed":false}}]`)
	f.Add("multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"tools\"\r\n\r\n[]\r\n--x--\r\n")
	f.Add("application/x-www-form-urlencoded", "tools=%ff")
	f.Add("text/plain", "tools=[]")
	f.Fuzz(func(t *testing.T, contentType, body string) {
		r := httptest.NewRequest(http.MethodPost, "/agents/a/runs/r/continue", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		req, err := decodeContinueForm(r)
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) || he.Status < 400 || he.Status > 499 || he.Detail == "" {
				t.Fatalf("error %v is not a 4xx HTTPError", err)
			}
			return
		}
		if req == nil {
			t.Fatal("nil request without error")
		}
	})
}
