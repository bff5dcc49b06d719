package memory

import (
	"slices"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// corrupt runs statements behind the driver's back, as another writer of a
// shared SQLite file can (SQLite keeps text in an integer column).
func corrupt(t *testing.T, d *db.DB, stmts ...string) {
	t.Helper()
	st, ok := sqlstore.FromDB(d)
	if !ok {
		t.Fatal("not a SQL store")
	}
	for _, q := range stmts {
		if _, err := st.SQL().ExecContext(bg, q); err != nil {
			t.Fatal(err)
		}
	}
}

// One memory row another writer left undecodable is left out of the
// memories a turn reads; the turn gets the others instead of failing.
func TestMemories_AnUndecodableRowIsLeftOut(t *testing.T) {
	d := testdbs.SQLite(t)
	seed(t, d, db.Memory{MemoryID: "m1", Memory: "likes tea", UserID: "u"},
		db.Memory{MemoryID: "m2", Memory: "lives in Oslo", UserID: "u"},
		db.Memory{MemoryID: "m3", Memory: "has a cat", UserID: "u"})
	corrupt(t, d, `UPDATE agno_memories SET created_at = 'yesterday' WHERE memory_id = 'm2'`)
	ms, err := Memories(bg, d, "u", 0)
	if err != nil {
		t.Fatalf("Memories: %v", err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.MemoryID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"m1", "m3"}) {
		t.Fatalf("memories %v, want m1 and m3", ids)
	}
}

// search_past_sessions and read_past_session leave out a session or a run
// another writer left undecodable and show the rest.
func TestPastSessions_AnUndecodableRowIsLeftOut(t *testing.T) {
	d := testdbs.SQLite(t)
	comp := run.Component{Type: run.TypeAgent, ID: "a"}
	var runIDs []string
	for i, sid := range []string{"s1", "s2", "s2", "s3"} {
		if _, err := d.UpsertSession(bg, &db.Session{SessionID: sid, SessionType: run.TypeAgent, AgentID: "a", UserID: "u", CreatedAt: int64(100 + i)}); err != nil {
			t.Fatal(err)
		}
		o := &run.Output{RunID: sid + "-r" + string(rune('0'+i)), SessionID: sid, AgentID: "a", UserID: "u", Status: run.StatusCompleted,
			CreatedAt: int64(100 + i), Messages: []model.Message{{Role: model.RoleUser, Content: "question " + sid}, {Role: model.RoleAssistant, Content: "answer"}}}
		row, err := db.RunFromOutput(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.UpsertRun(bg, row); err != nil {
			t.Fatal(err)
		}
		if sid == "s2" {
			runIDs = append(runIDs, o.RunID)
		}
	}
	corrupt(t, d, `UPDATE agno_sessions SET created_at = 'yesterday' WHERE session_id = 's1'`,
		`UPDATE agno_runs SET run_data = '{"broken' WHERE run_id = '`+runIDs[1]+`'`)
	p := PastSessions{DB: d, Sessions: 5, Runs: 5}
	c := Caller{UserID: "u", SessionID: "now", Component: comp}
	got, err := p.search(bg, c)
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, s.SessionID)
	}
	if !slices.Equal(ids, []string{"s3", "s2"}) {
		t.Fatalf("sessions %v, want s3 and s2", ids)
	}
	runs, err := p.lastRuns(bg, c, "s2", 5)
	if err != nil || len(runs) != 1 || runs[0].RunID != runIDs[0] {
		t.Fatalf("runs of s2 = %d, %v; want %s alone", len(runs), err, runIDs[0])
	}
}
