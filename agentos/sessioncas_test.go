package agentos

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// casServer serves an agent on a handle of a memory database whose first
// read of session sid lets another handle of it (another process) run
// elsewhere; it returns the server's URL and the other handle.
func casServer(t *testing.T, sid string, elsewhere func(other *db.DB)) (string, *db.DB) {
	t.Helper()
	mem := memory.New()
	other := db.New("other", mem)
	h := &dbtest.ReadHook{Driver: mem}
	h.Arm(sid, func() { elsewhere(other) })
	d := db.New("server", h)
	a, err := agent.New(agent.Config{ID: "echo", Model: scripted.Reply("hi"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)
	return ts.URL, other
}

func mustUpsert(t *testing.T, d *db.DB, s *db.Session) {
	t.Helper()
	if _, err := d.UpsertSession(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func storedSessionData(t *testing.T, d *db.DB, sid string) map[string]any {
	t.Helper()
	s, err := d.GetSession(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(s.SessionData, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A PATCH read the session and wrote it back with its edit: a write of
// another process in between (a rename) was lost. The PATCH's write is
// conditional on the row it read; refused, it reads the row again.
func TestSessions_PatchKeepsAnotherProcessesWriteBetweenItsReadAndWrite(t *testing.T) {
	t.Parallel()
	url, other := casServer(t, "s-p", func(other *db.DB) {
		mustUpsert(t, other, &db.Session{SessionID: "s-p", SessionType: run.TypeAgent, AgentID: "echo",
			SessionData: json.RawMessage(`{"session_name":"named elsewhere","session_state":{"a":1}}`)})
	})
	mustUpsert(t, other, &db.Session{SessionID: "s-p", SessionType: run.TypeAgent, AgentID: "echo",
		SessionData: json.RawMessage(`{"session_state":{"a":1}}`)})
	res := do(t, "PATCH", url+"/sessions/s-p", strings.NewReader(`{"session_state":{"patched":true}}`), map[string]string{"Content-Type": "application/json"})
	if res.status != 200 {
		t.Fatalf("PATCH = %d %s", res.status, res.body)
	}
	want := map[string]any{"session_name": "named elsewhere", "session_state": map[string]any{"patched": true}}
	if got := storedSessionData(t, other, "s-p"); !reflect.DeepEqual(got, want) {
		t.Fatalf("session_data %v, want %v", got, want)
	}
}

// POST /sessions looked for the id and created the session: one another
// process created in between was written over (201). The create is
// conditional on there being no row; refused, it looks again (409).
func TestSessions_CreateDoesNotWriteOverASessionAnotherProcessCreated(t *testing.T) {
	t.Parallel()
	url, other := casServer(t, "s-new", func(other *db.DB) {
		mustUpsert(t, other, &db.Session{SessionID: "s-new", SessionType: run.TypeAgent, AgentID: "echo",
			SessionData: json.RawMessage(`{"session_name":"theirs"}`)})
	})
	res := do(t, "POST", url+"/sessions", strings.NewReader(`{"session_id":"s-new","session_name":"mine","agent_id":"echo"}`), map[string]string{"Content-Type": "application/json"})
	if res.status != 409 {
		t.Fatalf("POST /sessions = %d %s, want 409", res.status, res.body)
	}
	if got := storedSessionData(t, other, "s-new"); got["session_name"] != "theirs" {
		t.Fatalf("session_data %v: the other process's session was written over", got)
	}
}

// A background run looked for its session and, finding none, created it
// before storing its PENDING row: a session another process created in
// between was written over (its name gone). The create is conditional on
// there being no row; refused, the run looks again and takes that row.
func TestBackgroundRun_DoesNotWriteOverASessionAnotherProcessCreated(t *testing.T) {
	t.Parallel()
	url, other := casServer(t, "s-bg", func(other *db.DB) {
		mustUpsert(t, other, &db.Session{SessionID: "s-bg", SessionType: run.TypeAgent, AgentID: "echo",
			SessionData: json.RawMessage(`{"session_name":"theirs","session_state":{"k":1}}`)})
	})
	acc := accepted(t, postForm(t, url+"/agents/echo/runs", map[string]string{"message": "hi", "background": "true", "session_id": "s-bg"}, nil))
	waitStatus(t, other, acc.RunID, run.StatusCompleted)
	got := storedSessionData(t, other, "s-bg")
	if got["session_name"] != "theirs" || !reflect.DeepEqual(got["session_state"], map[string]any{"k": 1.0}) {
		t.Fatalf("session_data %v: the other process's session was written over", got)
	}
}
