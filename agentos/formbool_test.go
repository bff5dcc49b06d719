package agentos

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestDecodeRunForm_BooleansAsAgnoReadsThem: Agno's form booleans are
// pydantic's: true for 1, on, t, true, y, yes and false for 0, off, f,
// false, n, no, in any case. "y" and "n" were refused (422) here.
func TestDecodeRunForm_BooleansAsAgnoReadsThem(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{"1": true, "on": true, "T": true, "true": true, "y": true, "Yes": true,
		"0": false, "OFF": false, "f": false, "false": false, "N": false, "no": false} {
		body := url.Values{"message": {"hi"}, "stream": {v}, "background": {v}}.Encode()
		r := httptest.NewRequest(http.MethodPost, "/agents/a/runs", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req, err := decodeRunForm(r, formLimits{})
		if err != nil {
			t.Errorf("%q: %v", v, err)
			continue
		}
		if req.Stream != want || req.Background != want {
			t.Errorf("%q: stream %v background %v, want %v", v, req.Stream, req.Background, want)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/agents/a/runs", strings.NewReader("message=hi&stream=maybe"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if _, err := decodeRunForm(r, formLimits{}); err == nil {
		t.Error("stream=maybe accepted")
	}
}
