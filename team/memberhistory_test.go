package team

import (
	"context"
	"slices"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// texts is the role and text of each message, "role: text".
func texts(msgs []model.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == model.RoleSystem {
			continue
		}
		out = append(out, string(m.Role)+": "+m.Content)
	}
	return out
}

// A member with AddHistoryToContext sees its own earlier runs in the team's
// session, which are member runs of the team's earlier runs (as Agno's
// _get_history_for_member_agent gives it); another member's runs and the
// team's own are not its history. Before, the history query kept runs with
// no parent only, and a member found none.
func TestTeam_MemberHistoryIsItsOwnMemberRuns(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		rec := &recorder{Model: script(match("task one", answer("first answer")), match("task two", answer("second answer")),
			match("task three", answer("third answer")))}
		member := mustAgent(t, agent.Config{ID: "m", Model: rec, DB: d, AddHistoryToContext: true, NumHistoryRuns: 1})
		other := mustAgent(t, agent.Config{ID: "o", Model: script(answer("other answer")), DB: d})
		leader := script(
			match("one", call(ToolDelegate, map[string]any{"member_id": "m", "task": "task one"})), match("one", answer("team one")),
			match("two", call(ToolDelegate, map[string]any{"member_id": "o", "task": "task for other"})),
			match("two", call(ToolDelegate, map[string]any{"member_id": "m", "task": "task two"})), match("two", answer("team two")),
			match("three", call(ToolDelegate, map[string]any{"member_id": "m", "task": "task three"})), match("three", answer("team three")))
		tm := mustTeam(t, Config{ID: "t", Model: leader, Members: []*agent.Agent{member, other}, DB: d})
		for i, in := range []string{"one", "two", "three"} {
			out, err := tm.Run(context.Background(), run.TextInput(in), agent.WithSessionID("s"))
			if err != nil || out.Status != run.StatusCompleted {
				t.Fatalf("team run %d: %v", i, err)
			}
		}
		reqs := rec.requests()
		if len(reqs) != 3 {
			t.Fatalf("member model called %d times, want 3", len(reqs))
		}
		want := [][]string{
			{"user: task one"},
			{"user: task one", "assistant: first answer", "user: task two"},
			// NumHistoryRuns 1: its last run only.
			{"user: task two", "assistant: second answer", "user: task three"},
		}
		for i := range want {
			if got := texts(reqs[i]); !slices.Equal(got, want[i]) {
				t.Errorf("member request %d:\n got %q\nwant %q", i, got, want[i])
			}
		}
	})
}
