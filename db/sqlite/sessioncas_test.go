package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// Two handles on one file (two processes) whose writers each read the
// session, add one to a counter and write expecting what they read,
// reading again when refused, lose no increment.
func TestConditionalWrite_TwoHandlesLoseNoIncrement(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentry.db")
	var handles []*db.DB
	for range 2 {
		d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		handles = append(handles, d)
	}
	dbtest.IncrementRace(t, handles, "s")
}

// Agno's SQLite writer stores session_data encoded twice, and a float that
// is not finite as Python spells it (NaN): a read unwraps the text and
// reads NaN as null. A conditional write expecting what the read gave is
// written (the row decides when the bytes differ); one expecting a row
// changed since is refused.
func TestConditionalWrite_AgnoEncodedDataMatchesItsRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openTemp(t)
	st, _ := sqlstore.FromDB(d)
	agno := func(sid, stored string) {
		t.Helper()
		if _, err := d.UpsertSession(ctx, dbtest.SessionWith(sid, `{}`, db.SessionExpect{})); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SQL().ExecContext(ctx, "UPDATE agno_sessions SET session_data = ? WHERE session_id = ?", stored, sid); err != nil {
			t.Fatal(err)
		}
	}
	writes := map[string]func(s *db.Session) error{
		"UpsertSession": func(s *db.Session) error { _, err := d.UpsertSession(ctx, s); return err },
		"SaveRun": func(s *db.Session) error {
			_, _, err := d.SaveRun(ctx, s, dbtest.NewRun(s.SessionID, s.SessionID+"-r"))
			return err
		},
	}
	for name, write := range writes {
		for i, stored := range []string{`"{\"session_state\": {\"x\": NaN, \"n\": 1}}"`, `{"session_state": {"x": NaN}}`, `null`} {
			sid := fmt.Sprint(name, i)
			agno(sid, stored)
			read, err := d.GetSession(ctx, sid)
			if err != nil {
				t.Fatal(err)
			}
			if err := write(dbtest.SessionWith(sid, `{"n":2}`, db.ExpectOf(read))); err != nil {
				t.Errorf("%s over %s: %v", name, stored, err)
			}
			agno(sid, stored)
			if _, err := st.SQL().ExecContext(ctx, "UPDATE agno_sessions SET session_data = '{\"theirs\": 1}' WHERE session_id = ?", sid); err != nil {
				t.Fatal(err)
			}
			if err := write(dbtest.SessionWith(sid, `{"n":3}`, db.ExpectOf(read))); !errors.Is(err, db.ErrSessionChanged) {
				t.Errorf("%s over a changed row: %v, want ErrSessionChanged", name, err)
			}
		}
	}
}

// The history cache keeps the session row of each answer: a refused
// conditional save leaves it as it was, an accepted one as an
// unconditional one does (the cache answers as the database does after
// each).
func TestHistoryCache_ConditionalSaves(t *testing.T) {
	t.Parallel()
	for _, exclusive := range []bool{false, true} {
		d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db"), Exclusive: exclusive})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		ctx := context.Background()
		storeRuns(t, d, "s", "r1", "r2")
		checkHistoryCache(t, d, "s", "start")
		read, err := d.GetSession(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.SaveRun(ctx, dbtest.SessionWith("s", `{"n":1}`, db.ExpectOf(read)), dbtest.NewRun("s", "r3")); err != nil {
			t.Fatal(err)
		}
		checkHistoryCache(t, d, "s", "accepted")
		_, _, err = d.SaveRun(ctx, dbtest.SessionWith("s", `{"n":2}`, db.ExpectOf(read)), dbtest.NewRun("s", "r4"))
		if !errors.Is(err, db.ErrSessionChanged) {
			t.Fatalf("stale save: %v, want ErrSessionChanged", err)
		}
		checkHistoryCache(t, d, "s", "refused")
		_, _, err = d.SaveRun(ctx, dbtest.SessionWith("s", `{"n":2}`, db.ExpectOf(nil)), dbtest.NewRun("s", "r5"))
		if !errors.Is(err, db.ErrSessionChanged) {
			t.Fatalf("save expecting no row: %v, want ErrSessionChanged", err)
		}
		checkHistoryCache(t, d, "s", "refused new")
		got, err := d.GetSession(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if !db.SameJSON(got.SessionData, []byte(`{"n":1}`)) {
			t.Fatalf("session_data %s", got.SessionData)
		}
	}
}
