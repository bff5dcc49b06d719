package agentos

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
)

// TestStream_MemoryAndSummaryEventsAndSessionSummaryRoute: a streamed run of
// an agent with memory and summaries carries MemoryUpdateStarted/Completed
// (with the user's memories) and SessionSummaryStarted/Completed on the SSE
// stream, and GET /sessions/{id} serves the stored summary, on SQLite.
func TestStream_MemoryAndSummaryEventsAndSessionSummaryRoute(t *testing.T) {
	t.Parallel()
	d, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	a, err := agent.New(agent.Config{ID: "mem", Model: scripted.Reply("noted"), DB: d, MemoryConfig: agent.MemoryConfig{
		UpdateMemoryOnRun: true, EnableSessionSummaries: true,
		MemoryModel:         scripted.Reply(`{"updates":[{"op":"add","memory_id":"","memory":"likes tea","topics":["drinks"]}]}`),
		SessionSummaryModel: scripted.Reply(`{"summary":"The user likes tea.","topics":["tea"]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)
	res := postForm(t, ts.URL+"/agents/mem/runs", map[string]string{"message": "I like tea", "stream": "true", "user_id": "u1", "session_id": "s1"}, nil)
	if res.status != 200 {
		t.Fatalf("run = %d %s", res.status, res.body)
	}
	order := []string{`"event":"MemoryUpdateStarted"`, `"event":"MemoryUpdateCompleted"`, `"event":"SessionSummaryStarted"`,
		`"event":"SessionSummaryCompleted"`, `"event":"RunCompleted"`}
	last := -1
	for _, e := range order {
		i := strings.Index(res.body, e)
		if i <= last {
			t.Fatalf("%s missing or out of order in\n%s", e, res.body)
		}
		last = i
	}
	if !contains(res.body, `"memories":[{"memory_id":`, `"memory":"likes tea"`, `"session_summary":{"summary":"The user likes tea."`) {
		t.Fatalf("event payloads missing in\n%s", res.body)
	}
	s := get(t, ts.URL+"/sessions/s1?type=agent", nil)
	if s.status != 200 || !contains(s.body, `"session_summary":{"summary":"The user likes tea."`, `"topics":["tea"]`) {
		t.Fatalf("GET /sessions/s1 = %d %s", s.status, s.body)
	}
	m := get(t, ts.URL+"/memories?user_id=u1", nil)
	if !contains(m.body, `"memory":"likes tea"`, `"agent_id":"mem"`) {
		t.Fatalf("GET /memories = %s", m.body)
	}
}
