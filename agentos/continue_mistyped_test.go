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

// TestDecodeContinueForm_RefusesMistypedMembers: a member of tools,
// requirements or step_requirements the server models, sent with a value
// its field cannot hold ("confirmed":"yes"), is 400 naming the member by
// its path; the decoding would set it aside as an unknown member and the
// run would continue without the answer. Members the server does not model
// pass through untouched, whatever their type.
func TestDecodeContinueForm_RefusesMistypedMembers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, field, value string
		refuse             string // "" accepted; else the path named in the 400
	}{
		{"tool confirmed string", "tools", `[{"tool_call_id":"c1","confirmed":"yes"}]`, "tools[0].confirmed"},
		{"tool answered number", "tools", `[{"tool_call_id":"c1"},{"tool_call_id":"c2","answered":1}]`, "tools[1].answered"},
		{"tool result object", "tools", `[{"tool_call_id":"c1","external_execution_required":true,"result":{"ok":true}}]`, "tools[0].result"},
		{"tool id number", "tools", `[{"tool_call_id":7,"confirmed":true}]`, "tools[0].tool_call_id"},
		{"requirement id number", "requirements", `[{"id":5}]`, "requirements[0].id"},
		{"requirement tool_execution string", "requirements", `[{"id":"c1","tool_execution":"confirmed"}]`, "requirements[0].tool_execution"},
		{"requirement confirmed string", "requirements", `[{"id":"c1","tool_execution":{"tool_call_id":"c1","confirmed":"true"}}]`,
			"requirements[0].tool_execution.confirmed"},
		{"step confirmed string", "step_requirements", `[{"step_id":"s1","confirmed":"yes"}]`, "step_requirements[0].confirmed"},
		{"step user_input string", "step_requirements", `[{"step_id":"s1","user_input":"42"}]`, "step_requirements[0].user_input"},
		{"step selected_choices string", "step_requirements", `[{"step_id":"s1","selected_choices":"a"}]`, "step_requirements[0].selected_choices"},
		{"step executor confirmed", "step_requirements",
			`[{"step_id":"s1","requires_executor_input":true,"executor_requirements":[{"id":"c1","tool_execution":{"confirmed":"no"}}]}]`,
			"step_requirements[0].executor_requirements[0].tool_execution.confirmed"},
		{"tool child_run_id number", "tools", `[{"tool_call_id":"c1","confirmed":true,"child_run_id":7}]`, "tools[0].child_run_id"},
		{"unknown members pass", "tools", `[{"tool_call_id":"c1","confirmed":true,"tool_call_metadata":{"x":[1]},"approval_id":3}]`, ""},
		{"unknown requirement members pass", "requirements",
			`[{"id":"c1","created_at":"2025-01-01T00:00:00","confirmation":"yes","tool_execution":{"confirmed":false,"user_feedback_schema":[1]}}]`, ""},
		{"nulls and empties pass", "step_requirements", `[{"step_id":"s1","confirmed":null,"user_input":null,"selected_choices":[],"step_name":""}]`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := url.Values{tc.field: {tc.value}}.Encode()
			r := httptest.NewRequest(http.MethodPost, "/agents/a/runs/r/continue", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req, err := decodeContinueForm(r)
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var he *httpError
			if !errors.As(err, &he) || he.Status != http.StatusBadRequest || !strings.Contains(he.Detail, tc.refuse+":") {
				t.Fatalf("err = %v, want 400 naming %s (decoded %+v)", err, tc.refuse, req)
			}
		})
	}
}

// TestContinueRun_MistypedAnswerLeavesTheRunPaused: a continue whose
// confirmation is the string "yes" is 400 naming it, in the wire's error
// shape, on the streamed and the unstreamed route, multipart and
// urlencoded; the run stays PAUSED with its tool not executed, and a
// proper answer then continues it.
func TestContinueRun_MistypedAnswerLeavesTheRunPaused(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	out := decode[run.Output](t, postForm(t, f.url+"/agents/hitl/runs", map[string]string{"message": "delete it", "stream": "false"}, nil))
	if out.Status != run.StatusPaused || len(out.Tools) != 1 {
		t.Fatalf("run = %+v", out)
	}
	id := out.Tools[0].ToolCallID
	u := f.url + "/agents/hitl/runs/" + out.RunID + "/continue"
	for _, fields := range []map[string]string{
		{"tools": fmt.Sprintf(`[{"tool_call_id":%q,"confirmed":"yes"}]`, id), "stream": "false"},
		{"tools": fmt.Sprintf(`[{"tool_call_id":%q,"confirmed":"yes"}]`, id), "stream": "true"},
		{"requirements": fmt.Sprintf(`[{"id":%q,"tool_execution":{"tool_call_id":%q,"confirmed":"true"}}]`, id, id), "stream": "false"},
	} {
		res := postForm(t, u, fields, nil)
		if res.status != http.StatusBadRequest || !strings.HasPrefix(res.body, `{"detail":"Invalid structure or content for `) ||
			!strings.Contains(res.body, ".confirmed: want a boolean") {
			t.Fatalf("continue %v = %d %s", fields, res.status, res.body)
		}
		if storedStatus(f.db, out.RunID) != run.StatusPaused || f.executed.Load() != 0 {
			t.Fatalf("refused continue changed the run: %s, tool executed %d", storedStatus(f.db, out.RunID), f.executed.Load())
		}
	}
	res := postForm(t, u, map[string]string{"tools": fmt.Sprintf(`[{"tool_call_id":%q,"confirmed":true}]`, id), "stream": "false"}, nil)
	if res.status != 200 || storedStatus(f.db, out.RunID) != run.StatusCompleted || f.executed.Load() != 1 {
		t.Fatalf("continue confirmed = %d %s, tool executed %d", res.status, res.body, f.executed.Load())
	}
}
