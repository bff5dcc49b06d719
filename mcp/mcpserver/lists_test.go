package mcpserver

import (
	"strings"
	"testing"
	"time"
)

// The list tools bound a page as the HTTP routes do (limit 1..1000): a
// huge limit used to read a whole table into one answer, and a negative
// limit or page was silently replaced by the default.
func TestListTools_RefuseOutOfRangePaging(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	cs := h.mustConnect(t, token(t, "alice", time.Now().Add(time.Hour)))
	for _, name := range []string{"get_sessions", "get_memories"} {
		for _, args := range []map[string]any{{"limit": 1001}, {"limit": 1 << 40}, {"limit": -1}, {"page": -2}} {
			r := callTool(t, cs, name, args)
			if !r.IsError || !strings.Contains(resultText(r), "invalid input") {
				t.Errorf("%s(%v) = %q (error %v), want invalid input", name, args, resultText(r), r.IsError)
			}
		}
		for _, args := range []map[string]any{nil, {"limit": 1000}, {"limit": 1, "page": 3}} {
			if r := callTool(t, cs, name, args); r.IsError {
				t.Errorf("%s(%v): %q", name, args, resultText(r))
			}
		}
	}
}
