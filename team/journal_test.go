package team

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// TestRun_JournalReplaysTheLeadersStepsAndDelegations: a team run given a
// journal records the leader's model calls and its delegations (a member run
// is one tool step); the same run again with the next attempt asks neither
// the leader's model nor the member again.
func TestRun_JournalReplaysTheLeadersStepsAndDelegations(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	j, err := db.NewJournal(f.db)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := f.team.Run(ctx, run.TextInput("greet me"), agent.WithSessionID("s1"), agent.WithRunID("team-run"), agent.WithJournal(j, 1))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := j.Steps(ctx, "team-run")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, s := range steps {
		kinds[s.Kind]++
	}
	if kinds["model"] != 2 || kinds["tool"] != 1 {
		t.Fatalf("journal steps by kind = %v, want 2 model and 1 tool", kinds)
	}
	again, err := f.team.Run(ctx, run.TextInput("greet me"), agent.WithSessionID("s1"), agent.WithRunID("team-run"), agent.WithJournal(j, 2))
	if err != nil {
		t.Fatal(err)
	}
	if again.Content != first.Content || again.Status != run.StatusCompleted {
		t.Errorf("replayed team run: %v %q, first %v %q", again.Status, again.Content, first.Status, first.Content)
	}
	if n := len(f.leader.requests()); n != 2 {
		t.Errorf("leader model asked %d times over both attempts, want 2", n)
	}
	if n := len(f.member.requests()); n != 1 {
		t.Errorf("member model asked %d times over both attempts, want 1", n)
	}
}
