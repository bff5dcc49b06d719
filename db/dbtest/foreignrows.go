package dbtest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// Rows written by another process (Agno, a script, a hand edit) that a
// driver cannot decode. SQLite's column types hold anything: a REAL where
// an integer timestamp belongs, text that is not JSON in a JSON column.
// Postgres and MySQL coerce or refuse such values, so there the row simply
// reads back; on every driver a list must still return the other rows, and
// a row it leaves out is reported as a *db.CorruptRowError naming it.
var foreignRowTests = map[string]func(t *testing.T, d *db.DB){
	"ListSessions_UndecodableRowDoesNotFailTheList": func(t *testing.T, d *db.DB) {
		for _, id := range []string{"s1", "s2", "s3"} {
			mustSession(t, bg, d, db.Session{SessionID: id})
		}
		foreignWrite(t, d, "UPDATE %s SET created_at = 1712345678.5, updated_at = 1712345679.25 WHERE session_id = ?", sessionsTable, "s2")
		got, _, err := d.ListSessions(bg, db.SessionFilter{Limit: 10, Page: 1})
		wantListed(t, "ListSessions", sessionIDs(got), err, "s2", "s1", "s3")
	},
	"GetRuns_UndecodableRowDoesNotFailTheList": func(t *testing.T, d *db.DB) {
		seedRuns(t, d, "s", 3)
		foreignWrite(t, d, "UPDATE %s SET created_at = 1712345678.5 WHERE run_id = ?", runsTable, "s-r1")
		got, _, err := d.GetRuns(bg, db.RunFilter{SessionID: "s", Limit: 10, Page: 1})
		wantListed(t, "GetRuns", runIDs(got), err, "s-r1", "s-r0", "s-r2")
	},
	"ListMemories_UndecodableRowDoesNotFailTheList": func(t *testing.T, d *db.DB) {
		for _, id := range []string{"m1", "m2", "m3"} {
			if _, err := d.UpsertMemory(bg, &db.Memory{MemoryID: id, Memory: "fact " + id, UserID: "u"}); err != nil {
				t.Fatal(err)
			}
		}
		foreignWrite(t, d, "UPDATE %s SET updated_at = 1712345678.5 WHERE memory_id = ?", memoriesTable, "m2")
		got, _, err := d.ListMemories(bg, db.MemoryFilter{Limit: 10, Page: 1})
		ids := make([]string, len(got))
		for i, m := range got {
			ids[i] = m.MemoryID
		}
		wantListed(t, "ListMemories", ids, err, "m2", "m1", "m3")
	},
}

func sessionsTable(t sqlstore.Tables) string { return t.Sessions }
func runsTable(t sqlstore.Tables) string     { return t.Runs }
func memoriesTable(t sqlstore.Tables) string { return t.Memories }

// foreignWrite runs an UPDATE (q with %s for the table) on the driver's
// database behind its back, as another process would.
func foreignWrite(t *testing.T, d *db.DB, q string, table func(sqlstore.Tables) string, id string) {
	t.Helper()
	st, ok := sqlstore.FromDB(d)
	if !ok {
		t.Fatal("not a SQL driver")
	}
	dl := st.SQLDialect()
	stmt := dl.Bind(fmt.Sprintf(q, dl.Table(table(st.Tables()))))
	if _, err := st.SQL().ExecContext(bg, stmt, id); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// wantListed checks a list holds every healthy row, and that the foreign
// row is either listed or reported as a *db.CorruptRowError naming it.
func wantListed(t *testing.T, what string, got []string, err error, foreign string, healthy ...string) {
	t.Helper()
	if err != nil {
		var ce *db.CorruptRowError
		if !errors.As(err, &ce) || ce.ID != foreign || !errors.Is(err, db.ErrCorruptRow) {
			t.Fatalf("%s error = %v, want nil or a *db.CorruptRowError for %s", what, err, foreign)
		}
	} else if !slices.Contains(got, foreign) {
		t.Fatalf("%s = %v without an error, want %s listed or reported", what, got, foreign)
	}
	for _, id := range healthy {
		if !slices.Contains(got, id) {
			t.Fatalf("%s = %v (error %v), want %s listed", what, got, err, id)
		}
	}
}
