package team

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// A team run adds to its session's metrics its leader's tokens and every
// member run's, a member team's members included, as Agno counts them;
// whether the member runs are stored with the team run or not.
func TestRun_SessionMetricsCountMemberRuns(t *testing.T) {
	t.Parallel()
	for _, store := range []bool{true, false} {
		ctx := context.Background()
		d := openDB(t)
		w := mustAgent(t, agent.Config{ID: "writer", Model: scripted.Reply("hello from the writer"), DB: d})
		inner := mustTeam(t, Config{ID: "inner", Model: leaderScript("writer"), Members: []*agent.Agent{w}, DB: d})
		outer := mustTeam(t, Config{ID: "outer", Model: leaderScript("inner"), Teams: []*Team{inner}, DB: d, StoreMemberResponses: boolp(store)})
		out, err := outer.Run(ctx, run.TextInput("go"), agent.WithSessionID("s1"))
		if err != nil {
			t.Fatal(err)
		}
		// Every run of the session, the outer team's and each member's.
		rows, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: "s1", Limit: 100, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		var want run.SessionMetrics
		var kinds []string
		for _, row := range rows {
			o, err := row.Output()
			if err != nil {
				t.Fatal(err)
			}
			want.AddRun(o.Metrics)
			kinds = append(kinds, o.TeamID+o.AgentID)
		}
		if len(rows) != 3 {
			t.Fatalf("store %v: runs %v, want the outer team's, the inner team's and the writer's", store, kinds)
		}
		s, err := d.GetSession(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		var data struct {
			Metrics json.RawMessage `json:"session_metrics"`
		}
		if err := json.Unmarshal(s.SessionData, &data); err != nil {
			t.Fatal(err)
		}
		wb, _ := json.Marshal(want)
		if diff := jsontest.Diff(wb, data.Metrics); diff != "" || want.TotalTokens <= out.Metrics.TotalTokens {
			t.Fatalf("store %v: session metrics %s: %s (want %s)", store, data.Metrics, diff, wb)
		}
	}
}
