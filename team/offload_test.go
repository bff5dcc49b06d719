package team

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

func TestTeam_OffloadsTheLeadersAndTheMembersOversizedResults(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	big := func(name string) tool.Tool {
		return tool.MustFunc(tool.FuncConfig{Name: name, Description: "Returns a lot."}, func(context.Context, struct{}) (string, error) {
			return strings.Repeat("logline "+name+"\n", 5000), nil
		})
	}
	member, err := agent.New(agent.Config{ID: "m", Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "member_dump"}}}, {Content: "member done"}}}),
		DB: d, Tools: []tool.Tool{big("member_dump")}, OffloadToolResults: &offload.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	leader := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "leader_dump"}}},
		{ToolCalls: []scripted.ToolCall{{Name: ToolDelegate, Args: map[string]any{"member_id": "m", "task": "dump"}}}},
		{Content: "all done"}}})
	tm, err := New(Config{ID: "t", Model: leader, Members: []*agent.Agent{member}, DB: d, Tools: []tool.Tool{big("leader_dump")},
		OffloadToolResults: &offload.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := tm.Run(context.Background(), run.TextInput("go"), agent.WithSessionID("s"), agent.WithRunID("team-run"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run: %v", err)
	}
	row, err := d.GetRun(context.Background(), "team-run")
	if err != nil {
		t.Fatal(err)
	}
	s := string(row.RunData)
	if strings.Count(s, "logline leader_dump") > 100 || strings.Count(s, "logline member_dump") > 100 || !strings.Contains(s, `<result id=\"res_`) || len(s) > 30_000 {
		t.Fatalf("team run_data (%d bytes) keeps oversized results", len(s))
	}
}
