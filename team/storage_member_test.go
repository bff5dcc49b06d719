package team

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// A member with no offload or media settings of its own offloads its
// oversized results like the team: in its own stored run and in the team
// run's member_responses.
func TestTeam_MembersWithoutSettingsOffloadLikeTheTeam(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	store, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	dump := tool.MustFunc(tool.FuncConfig{Name: "member_dump", Description: "Returns a lot."}, func(context.Context, struct{}) (string, error) {
		return strings.Repeat("logline member_dump\n", 5000), nil
	})
	member, err := agent.New(agent.Config{ID: "m", DB: d, Tools: []tool.Tool{dump}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "member_dump"}}}, {Content: "member done"}}})})
	if err != nil {
		t.Fatal(err)
	}
	leader := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: ToolDelegate, Args: map[string]any{"member_id": "m", "task": "dump"}}}},
		{Content: "all done"}}})
	tm, err := New(Config{ID: "t", Model: leader, Members: []*agent.Agent{member}, DB: d,
		OffloadToolResults: &offload.Config{}, MediaStorage: store})
	if err != nil {
		t.Fatal(err)
	}
	out, err := tm.Run(context.Background(), run.TextInput("go"), agent.WithSessionID("s"), agent.WithRunID("team-inherit"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run: %v", err)
	}
	row, err := d.GetRun(context.Background(), "team-inherit")
	if err != nil {
		t.Fatal(err)
	}
	var stored run.Output
	if err := json.Unmarshal(row.RunData, &stored); err != nil || len(stored.MemberResponses) != 1 {
		t.Fatalf("stored team run: %v", err)
	}
	var m run.Output
	if err := json.Unmarshal(stored.MemberResponses[0], &m); err != nil {
		t.Fatal(err)
	}
	mrow, err := d.GetRun(context.Background(), m.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"team run": string(row.RunData), "member run": string(mrow.RunData)} {
		if strings.Count(s, "logline member_dump") > 100 || !strings.Contains(s, `<result id=\"res_`) || len(s) > 30_000 {
			t.Fatalf("%s (%d bytes) keeps the member's oversized result", name, len(s))
		}
	}
}
