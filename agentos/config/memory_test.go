package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
)

// TestMemorySettings_FromYAMLWork: the memory keys are accepted and the
// agent and team built from them remember, summarise and search.
func TestMemorySettings_FromYAMLWork(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	main := write("main.yaml", "turns:\n  - match: 'new messages:'\n    content: '{\"summary\":\"talked about tea\",\"topics\":[\"tea\"]}'\n  - content: noted\n")
	mem := write("mem.yaml", "turns:\n  - content: '{\"updates\":[{\"op\":\"add\",\"memory_id\":\"\",\"memory\":\"likes tea\",\"topics\":[\"drinks\"]}]}'\n")
	yml := "agents:\n  - id: a\n    model: scripted:" + main + "\n    update_memory_on_run: true\n    memory_model: scripted:" + mem +
		"\n    enable_agentic_memory: true\n    add_memories_to_context: true\n    enable_session_summaries: true\n    add_session_summary_to_context: true" +
		"\n    search_past_sessions: true\n    num_past_sessions_to_search: 5\n    num_past_session_runs_in_search: 2\n" +
		"teams:\n  - id: t\n    model: scripted:" + main + "\n    members: [a]\n    update_memory_on_run: true\n    memory_model: scripted:" + mem + "\n"
	cfg, err := Parse([]byte(yml), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := testdbs.SQLite(t)
	a, err := cfg.Agents[0].Build(d)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, s := range a.Tools() {
		names[s.Name] = true
	}
	if !names["update_user_memory"] || !names["search_past_sessions"] || !names["read_past_session"] {
		t.Fatalf("tools = %v", names)
	}
	ctx := context.Background()
	if _, err := a.Run(ctx, run.TextInput("I like tea"), agent.WithUserID("u1"), agent.WithSessionID("s1")); err != nil {
		t.Fatal(err)
	}
	ms, _, err := d.ListMemories(ctx, db.MemoryFilter{UserID: "u1", Limit: 10, Page: 1})
	if err != nil || len(ms) != 1 || ms[0].Memory != "likes tea" {
		t.Fatalf("memories = %+v, %v", ms, err)
	}
	s, err := d.GetSession(ctx, "s1")
	if err != nil || !strings.Contains(string(s.Summary), "talked about tea") {
		t.Fatalf("session summary = %s, %v", s.Summary, err)
	}
	teams, _, err := cfg.BuildTeamsAndWorkflows(d, []*agent.Agent{a}, BuildOptions{})
	if err != nil || len(teams) != 1 || !teams[0].Config().UpdateMemoryOnRun || teams[0].Config().MemoryModel == nil {
		t.Fatalf("team memory settings not built: %v", err)
	}
}
