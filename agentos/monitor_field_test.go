package agentos

import (
	"net/http"
	"strings"
	"testing"
)

// TestRunForm_MonitorIsAcceptedAsAgnoDoes: Agno's team run form declares
// monitor (default true) and nothing in Agno 3.0 reads it; its clients
// send it. It was refused (422, "not supported"); a boolean is accepted
// and, as in Agno, changes nothing; anything else is 422.
func TestRunForm_MonitorIsAcceptedAsAgnoDoes(t *testing.T) {
	t.Parallel()
	url, _ := knowledgeRunServer(t, false)
	for _, path := range []string{"/teams/crew/runs", "/agents/plain/runs"} {
		for _, v := range []string{"true", "false", ""} {
			if res := postForm(t, url+path, map[string]string{"message": "hi", "stream": "false", "monitor": v}, nil); res.status != http.StatusOK {
				t.Errorf("%s monitor=%q: %d %s", path, v, res.status, res.body)
			}
		}
		if res := postForm(t, url+path, map[string]string{"message": "hi", "stream": "false", "monitor": "maybe"}, nil); res.status != http.StatusUnprocessableEntity ||
			!strings.Contains(res.detail(t), "monitor") {
			t.Errorf("%s monitor=maybe: %d %s", path, res.status, res.body)
		}
	}
}
