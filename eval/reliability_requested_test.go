package eval_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/eval"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// A run Agno stored records no execution for a call its tool_call_limit
// refused: the assistant message's request is the only trace of it. As
// Agno's reliability eval, such a request counts as an attempt: an
// unexpected one fails a strict eval (is additional in a lenient one), a
// forbidden one fails it, and an expected one is missing "requested but
// refused". Requests in history messages (an earlier run's) do not count,
// and a member run's requests count as its executions do.
func TestReliability_ARequestWithoutExecutionIsAnAttempt(t *testing.T) {
	t.Parallel()
	msgs := []model.Message{
		{Role: model.RoleAssistant, FromHistory: true, ToolCalls: []model.ToolCall{{ID: "h1", Name: "yesterday", Arguments: "{}"}}},
		{Role: model.RoleUser, Content: "6*7, then look it up"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "multiply", Arguments: `{"a":6,"b":7}`},
			{ID: "c2", Name: "search", Arguments: `{"q":"42"}`}, {ID: "c3", Name: "shell", Arguments: `{}`}}},
	}
	agentRun := &run.Output{AgentID: "calc", Messages: msgs,
		Tools: []run.ToolExecution{{ToolCallID: "c1", ToolName: "multiply", ToolArgs: json.RawMessage(`{"a":6,"b":7}`)}}}
	member, _ := json.Marshal(map[string]any{"agent_id": "calc", "messages": msgs,
		"tools": []map[string]any{{"tool_call_id": "c1", "tool_name": "multiply", "tool_args": map[string]any{"a": 6, "b": 7}}}})
	teamRun := &run.Output{TeamID: "crew", MemberResponses: []json.RawMessage{member}}
	cases := []struct {
		name                        string
		r                           eval.Reliability
		passed                      bool
		failed, additional, missing []string
	}{
		{name: "strict", r: eval.Reliability{ExpectedToolCalls: []string{"multiply"}},
			failed: []string{"search", "shell"}},
		{name: "lenient", r: eval.Reliability{ExpectedToolCalls: []string{"multiply"}, AllowAdditionalToolCalls: true},
			passed: true, additional: []string{"search", "shell"}},
		{name: "forbidden", r: eval.Reliability{ExpectedToolCalls: []string{"multiply"}, AllowAdditionalToolCalls: true, ForbiddenToolCalls: []string{"shell"}},
			failed: []string{"shell"}, additional: []string{"search"}},
		{name: "expected but refused", r: eval.Reliability{ExpectedToolCalls: []string{"multiply", "search", "shell"}},
			missing: []string{"search (requested but refused/errored)", "shell (requested but refused/errored)"}},
	}
	for _, out := range []*run.Output{agentRun, teamRun} {
		for _, c := range cases {
			c.r.Output = out
			res, err := c.r.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal([]any{res.Passed, res.FailedToolCalls, res.AdditionalToolCalls, res.MissingToolCalls, res.PassedToolCalls})
			want, _ := json.Marshal([]any{c.passed, orEmpty(c.failed), orEmpty(c.additional), orEmpty(c.missing), []string{"multiply"}})
			if string(got) != string(want) {
				t.Errorf("%s (team %q): got %s, want %s", c.name, out.TeamID, got, want)
			}
		}
	}
}

// A member run whose messages do not decode keeps its executions.
func TestReliability_AMemberWithUnreadableMessagesKeepsItsCalls(t *testing.T) {
	t.Parallel()
	member := json.RawMessage(`{"agent_id":"calc","messages":5,"tools":[{"tool_call_id":"c1","tool_name":"multiply","tool_args":{"a":6,"b":7}}]}`)
	res, err := (&eval.Reliability{Output: &run.Output{TeamID: "crew", MemberResponses: []json.RawMessage{member}},
		ExpectedToolCalls: []string{"multiply"}}).Run(context.Background())
	if err != nil || !res.Passed || len(res.PassedToolCalls) != 1 {
		t.Fatalf("%+v, %v; want multiply passed", res, err)
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
