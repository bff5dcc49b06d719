package agentos

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// A finished run replayed from its row (no event log holds it: Agno wrote
// it, or retention deleted the log) sends its stored events as stored:
// members Event does not model (Agno's nested_depth, workflow_agent) were
// dropped from the replayed frames.
func TestResume_ReplayedRowKeepsTheEventsUnknownMembers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdbs.SQLite(t)
	u, _ := streamServer(t, d, scripted.Reply("done"))
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent, AgentID: "echo"}); err != nil {
		t.Fatal(err)
	}
	row := &db.Run{RunID: "r1", SessionID: "s", RunType: run.TypeAgent, AgentID: "echo", Status: run.StatusCompleted, CreatedAt: 1, UpdatedAt: 2,
		RunData: json.RawMessage(`{"run_id":"r1","agent_id":"echo","session_id":"s","status":"COMPLETED","content":"done","created_at":1,` +
			`"events":[{"event":"RunStarted","created_at":1,"run_id":"r1","nested_depth":0,"workflow_agent":false},` +
			`{"event":"RunCompleted","created_at":2,"run_id":"r1","content":"done","nested_depth":0}]}`)}
	if _, err := d.UpsertRun(ctx, row); err != nil {
		t.Fatal(err)
	}
	res, err := sendForm(u+"/agents/echo/runs/r1/resume", map[string]string{"session_id": "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	body := string(b)
	if res.StatusCode != 200 || strings.Count(body, `"nested_depth":0`) != 2 || !strings.Contains(body, `"workflow_agent":false`) {
		t.Fatalf("replay = %d %s", res.StatusCode, body)
	}
}
