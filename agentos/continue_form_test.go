package agentos

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/run"
)

// TestDecodeContinueForm_RefusesWhatItCannotHonour: Agno's continue fields
// Agentry does not implement are accepted only at their defaults (what
// Agno's clients send), and any other field is 422 rather than ignored.
func TestDecodeContinueForm_RefusesWhatItCannotHonour(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		fields url.Values
		refuse string // "" accepted; else the field named in the 422
	}{
		{"agno client form", url.Values{"tools": {"[]"}, "stream": {"false"}, "session_id": {"s"}, "user_id": {"u"}}, ""},
		{"defaults", url.Values{"input": {""}, "continue_from": {"end"}, "fork": {"false"}, "regenerate": {"0"},
			"replace_original": {""}, "additional_instructions": {" "}, "background": {"false"}, "factory_input": {""}}, ""},
		{"input", url.Values{"input": {"and also this"}}, "input"},
		{"continue_from", url.Values{"continue_from": {"last_user"}}, "continue_from"},
		{"continue_from index", url.Values{"continue_from": {"3"}}, "continue_from"},
		{"fork", url.Values{"fork": {"true"}}, "fork"},
		{"regenerate", url.Values{"regenerate": {"true"}}, "regenerate"},
		{"replace_original", url.Values{"replace_original": {"false"}}, "replace_original"},
		{"additional_instructions", url.Values{"additional_instructions": {"shorter"}}, "additional_instructions"},
		{"background", url.Values{"background": {"true"}}, "background"},
		{"bad background", url.Values{"background": {"maybe"}}, "background"},
		{"factory_input", url.Values{"factory_input": {`{"k":1}`}}, "factory_input"},
		{"unknown", url.Values{"dependencies": {`{"a":1}`}}, "dependencies"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodPost, "/agents/a/runs/r/continue", strings.NewReader(tc.fields.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			_, err := decodeContinueForm(r)
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var he *httpError
			if !errors.As(err, &he) || he.Status != http.StatusUnprocessableEntity || !strings.Contains(he.Detail, `"`+tc.refuse+`"`) {
				t.Fatalf("err = %v, want 422 naming %q", err, tc.refuse)
			}
		})
	}
}

// TestContinueRun_RefusedFieldLeavesTheRunPaused: a continue asking for
// what Agentry cannot do (fork) is 422 and the run stays PAUSED, its tool
// not executed.
func TestContinueRun_RefusedFieldLeavesTheRunPaused(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	out := decode[run.Output](t, postForm(t, f.url+"/agents/hitl/runs", map[string]string{"message": "delete it", "stream": "false"}, nil))
	if out.Status != run.StatusPaused || len(out.Tools) != 1 {
		t.Fatalf("run = %+v", out)
	}
	tools := fmt.Sprintf(`[{"tool_call_id":%q,"confirmed":true}]`, out.Tools[0].ToolCallID)
	res := postForm(t, f.url+"/agents/hitl/runs/"+out.RunID+"/continue", map[string]string{"tools": tools, "stream": "false", "fork": "true"}, nil)
	if res.status != 422 || !strings.Contains(res.body, "fork") {
		t.Fatalf("continue with fork = %d %s", res.status, res.body)
	}
	if storedStatus(f.db, out.RunID) != run.StatusPaused || f.executed.Load() != 0 {
		t.Fatalf("refused continue changed the run: %s, tool executed %d", storedStatus(f.db, out.RunID), f.executed.Load())
	}
	res = postForm(t, f.url+"/agents/hitl/runs/"+out.RunID+"/continue", map[string]string{"tools": tools, "stream": "false", "fork": "false", "continue_from": "end"}, nil)
	if res.status != 200 || storedStatus(f.db, out.RunID) != run.StatusCompleted {
		t.Fatalf("continue at defaults = %d %s", res.status, res.body)
	}
}
