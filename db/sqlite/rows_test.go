package sqlite_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
)

func seeded(t *testing.T, n int) (*db.DB, *sqlstore.Store) {
	t.Helper()
	d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "rows.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := string(rune('a' + i))
		if _, err := d.UpsertRun(ctx, &db.Run{RunID: id, SessionID: "s", RunType: run.TypeAgent, Status: run.StatusCompleted,
			RunData: json.RawMessage(`{"run_id":"` + id + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := sqlstore.FromDB(d)
	return d, st
}

func TestGetRuns_CorruptRunDataIsReportedAndOtherRowsSurvive(t *testing.T) {
	t.Parallel()
	d, st := seeded(t, 3)
	exec(t, st.SQL(), `UPDATE agno_runs SET run_data = '{"run_id": "b", broken' WHERE run_id = 'b'`)
	_, err := d.GetRun(ctx, "b")
	var ce *db.CorruptRowError
	if !errors.As(err, &ce) || ce.ID != "b" || !errors.Is(err, db.ErrCorruptRow) {
		t.Fatalf("GetRun error = %v, want *CorruptRowError for b", err)
	}
	runs, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: "s", Limit: 10, Page: 1})
	if !errors.As(err, &ce) || ce.ID != "b" {
		t.Fatalf("GetRuns error = %v, want *CorruptRowError for b", err)
	}
	if len(runs) != 2 || runs[0].RunID != "a" || runs[1].RunID != "c" {
		t.Fatalf("GetRuns kept %d rows, want a and c", len(runs))
	}
	hist, err := d.HistoryRuns(ctx, db.HistoryQuery{SessionID: "s", Limit: 5})
	if !errors.Is(err, db.ErrCorruptRow) || len(hist) != 2 {
		t.Fatalf("HistoryRuns = %d rows, %v; want 2 rows and ErrCorruptRow", len(hist), err)
	}
	if _, err := d.GetRun(ctx, "a"); err != nil {
		t.Fatalf("healthy run unreadable: %v", err)
	}
}

func TestRead_DecodesAgnoDoubleEncodedJSON(t *testing.T) {
	t.Parallel()
	d, st := seeded(t, 1)
	inner := `{"session_name":"caf\u00e9"}`
	once, _ := json.Marshal(inner)
	twice, _ := json.Marshal(string(once))
	cases := []struct {
		name   string
		stored string
	}{
		{"single layer", inner},
		{"double encoded", string(once)},
		{"triple encoded", string(twice)},
	}
	for _, c := range cases {
		if _, err := st.SQL().ExecContext(ctx, "UPDATE agno_sessions SET session_data = ? WHERE session_id = 's'", c.stored); err != nil {
			t.Fatal(err)
		}
		s, err := d.GetSession(ctx, "s")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got db.SessionData
		if err := json.Unmarshal(s.SessionData, &got); err != nil || got.SessionName != "café" {
			t.Fatalf("%s: session_data = %s (%v), want the object", c.name, s.SessionData, err)
		}
	}
	exec(t, st.SQL(), `UPDATE agno_runs SET run_data = '"{\"run_id\":\"a\",\"content\":\"hi\"}"' WHERE run_id = 'a'`)
	r, err := d.GetRun(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Output()
	if err != nil || out.RunID != "a" {
		t.Fatalf("double-encoded run_data decoded to %s (%v)", r.RunData, err)
	}
	exec(t, st.SQL(), `UPDATE agno_memories SET topics = NULL`)
	exec(t, st.SQL(), `INSERT INTO agno_memories (memory_id, memory, topics, user_id, created_at, updated_at) VALUES ('m', '"likes tea"', '"[\"drinks\"]"', 'u', 1, 1)`)
	m, err := d.GetMemory(ctx, "m")
	if err != nil || m.Memory != "likes tea" || len(m.Topics) != 1 || m.Topics[0] != "drinks" {
		t.Fatalf("memory = %+v, %v", m, err)
	}
	list, _, err := d.ListMemories(ctx, db.MemoryFilter{Topics: []string{"drinks"}, Limit: 5, Page: 1})
	if err != nil || len(list) != 1 {
		t.Fatalf("topic filter over double-encoded topics: %d rows, %v", len(list), err)
	}
}

// A session whose JSON column another writer left as text that is not JSON
// is left out of ListSessions and reported; the other sessions list.
func TestListSessions_CorruptSessionDataIsReportedAndOtherRowsSurvive(t *testing.T) {
	t.Parallel()
	d, st := seeded(t, 0)
	for _, id := range []string{"t", "u"} {
		if _, err := d.UpsertSession(ctx, &db.Session{SessionID: id, SessionType: run.TypeAgent}); err != nil {
			t.Fatal(err)
		}
	}
	exec(t, st.SQL(), `UPDATE agno_sessions SET session_data = '{"session_name": "half' WHERE session_id = 't'`)
	list, total, err := d.ListSessions(ctx, db.SessionFilter{Limit: 10, Page: 1})
	var ce *db.CorruptRowError
	if !errors.As(err, &ce) || ce.ID != "t" || ce.Table != "sessions" {
		t.Fatalf("ListSessions error = %v, want a *CorruptRowError for t", err)
	}
	if len(list) != 2 || total != 3 {
		t.Fatalf("ListSessions = %d rows of %d, want s and u of 3", len(list), total)
	}
	for _, s := range list {
		if s.SessionID == "t" {
			t.Fatal("the corrupt session was listed")
		}
	}
}
