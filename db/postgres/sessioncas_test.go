package postgres_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
)

// mustRead is the session's row as stored.
func mustRead(t *testing.T, d *db.DB, sid string) *db.Session {
	t.Helper()
	s, err := d.GetSession(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkUnwritten fails unless sid's session_data is still want and none
// of the runs is stored.
func checkUnwritten(t *testing.T, d *db.DB, sid, want string, runIDs ...string) {
	t.Helper()
	if got := mustRead(t, d, sid).SessionData; !db.SameJSON(got, []byte(want)) {
		t.Errorf("session %s holds %s, want %s", sid, got, want)
	}
	for _, id := range runIDs {
		if _, err := d.GetRun(ctx, id); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("run %s: %v, want it unwritten", id, err)
		}
	}
}

// A conditional save is the one round trip of an unconditional one when
// its expectation holds (the compare is in the session's statement); a
// stale one is refused, writing neither the session nor the run, on the
// one-trip Batch (SaveRun) and on the Pipeline with statements first
// (SaveRunPiped, a durable queue's fenced save).
func TestSaveRun_ConditionalPipedSave(t *testing.T) {
	t.Parallel()
	d, trips := openCounted(t)
	st, _ := sqlstore.FromDB(d)
	if _, _, err := d.SaveRun(ctx, dbtest.SessionWith("s", `{"n":0}`, db.ExpectOf(nil)), dbtest.NewRun("s", "warm")); err != nil {
		t.Fatal(err)
	}
	// Prepares the conditional update (pgx caches statements per
	// connection; the pool has one).
	if _, _, err := d.SaveRun(ctx, dbtest.SessionWith("s", `{"n":0}`, db.ExpectOf(mustRead(t, d, "s"))), dbtest.NewRun("s", "warm2")); err != nil {
		t.Fatal(err)
	}
	read := mustRead(t, d, "s")
	trips.reset()
	saved, _, err := d.SaveRun(ctx, dbtest.SessionWith("s", `{"n":1}`, db.ExpectOf(read)), dbtest.NewRun("s", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	if n := trips.count(); n != 1 {
		t.Errorf("a conditional save whose expectation holds: %d round trips, want 1", n)
	}
	if saved.Expect.Row != db.ExpectAnything || saved.Expect.Data != nil || !db.SameJSON(saved.SessionData, []byte(`{"n":1}`)) {
		t.Errorf("returned row %+v", saved)
	}

	// Stale: read holds {"n":0}, the row {"n":1}.
	for _, c := range []struct {
		name string
		save func(s *db.Session, r *db.Run) error
	}{
		{"Batch", func(s *db.Session, r *db.Run) error { _, _, err := d.SaveRun(ctx, s, r); return err }},
		{"Pipeline", func(s *db.Session, r *db.Run) error {
			_, _, err := st.SaveRunPiped(ctx, s, r, []db.PipedStmt{{Query: "SELECT 1"}})
			return err
		}},
	} {
		err := c.save(dbtest.SessionWith("s", `{"n":9}`, db.ExpectOf(read)), dbtest.NewRun("s", "stale-"+c.name))
		if !errors.Is(err, db.ErrSessionChanged) {
			t.Errorf("%s: stale save = %v, want ErrSessionChanged", c.name, err)
		}
		checkUnwritten(t, d, "s", `{"n":1}`, "stale-"+c.name)
		err = c.save(dbtest.SessionWith("s", `{"n":9}`, db.ExpectOf(nil)), dbtest.NewRun("s", "new-"+c.name))
		if !errors.Is(err, db.ErrSessionChanged) {
			t.Errorf("%s: save expecting no row over a row = %v, want ErrSessionChanged", c.name, err)
		}
		checkUnwritten(t, d, "s", `{"n":1}`, "new-"+c.name)
	}
}

// A SaveRunsPiped group is all or nothing: a member whose expectation is
// stale fails the group as a PipedWriteError naming it with
// ErrSessionChanged, and the other member is not written either (the
// durable queue's enqueue group then commits the others again without
// it, and writes it alone). Committed again without the stale member, the
// other one is written.
func TestSaveRunsPiped_StaleMemberFailsTheGroupNamingIt(t *testing.T) {
	t.Parallel()
	d := openFresh(t, postgres.Config{})
	for _, sid := range []string{"a", "b"} {
		if _, err := d.UpsertSession(ctx, dbtest.SessionWith(sid, `{"n":0}`, db.SessionExpect{})); err != nil {
			t.Fatal(err)
		}
	}
	readA, readB := mustRead(t, d, "a"), mustRead(t, d, "b")
	if _, err := d.UpsertSession(ctx, dbtest.SessionWith("b", `{"n":1,"theirs":true}`, db.SessionExpect{})); err != nil {
		t.Fatal(err) // another process changed b
	}
	for _, staleAt := range []int{0, 1} {
		fresh := db.PipedRunWrite{Ctx: ctx, Session: dbtest.SessionWith("a", `{"n":1}`, db.ExpectOf(readA)), Run: dbtest.NewRun("a", fmt.Sprint("ra", staleAt))}
		stale := db.PipedRunWrite{Ctx: ctx, Session: dbtest.SessionWith("b", `{"n":1}`, db.ExpectOf(readB)), Run: dbtest.NewRun("b", fmt.Sprint("rb", staleAt))}
		ws := []db.PipedRunWrite{fresh, stale}
		if staleAt == 0 {
			ws = []db.PipedRunWrite{stale, fresh}
		}
		err := d.SaveRunsPiped(ctx, nil, ws)
		var pe *db.PipedWriteError
		if !errors.As(err, &pe) || pe.Index != staleAt || !errors.Is(err, db.ErrSessionChanged) || errors.Is(err, db.ErrNotFound) {
			t.Fatalf("stale member at %d: %v, want a PipedWriteError naming it with ErrSessionChanged", staleAt, err)
		}
		checkUnwritten(t, d, "a", `{"n":0}`, fresh.Run.RunID)
		checkUnwritten(t, d, "b", `{"n":1,"theirs":true}`, stale.Run.RunID)
	}
	if err := d.SaveRunsPiped(ctx, nil, []db.PipedRunWrite{{Ctx: ctx, Session: dbtest.SessionWith("a", `{"n":1}`, db.ExpectOf(readA)), Run: dbtest.NewRun("a", "ra")}}); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, d, "a").SessionData; !db.SameJSON(got, []byte(`{"n":1}`)) {
		t.Errorf("a holds %s after the group without b", got)
	}
	// Another user's row in a group is still ErrNotFound, whatever the
	// expectation.
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "c", SessionType: run.TypeAgent, UserID: "alice"}); err != nil {
		t.Fatal(err)
	}
	bob := db.WithUserScope(ctx, "bob")
	err := d.SaveRunsPiped(ctx, nil, []db.PipedRunWrite{{Ctx: bob, Session: dbtest.SessionWith("c", `{}`, db.ExpectOf(nil)), Run: dbtest.NewRun("c", "rc")}})
	if !errors.Is(err, db.ErrNotFound) {
		t.Errorf("bob's conditional write over alice's row in a group: %v, want ErrNotFound", err)
	}
}

// A JSONB column holding the document as a JSON string (a writer that
// encoded it twice) reads unwrapped, so the JSONB compare misses the
// expected value a read gave: the row then decides, and the write goes
// through, on every path (plain, piped, grouped); a changed one does not.
func TestConditionalWrite_StringWrappedDataMatchesItsRead(t *testing.T) {
	t.Parallel()
	d := openFresh(t, postgres.Config{})
	st, _ := sqlstore.FromDB(d)
	table := st.SQLDialect().Table(st.Tables().Sessions)
	wrap := func(sid, doc string) {
		t.Helper()
		if _, err := d.UpsertSession(ctx, dbtest.SessionWith(sid, `{}`, db.SessionExpect{})); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SQL().ExecContext(ctx, "UPDATE "+table+" SET session_data = to_jsonb($1::text) WHERE session_id = $2", doc, sid); err != nil {
			t.Fatal(err)
		}
	}
	writes := map[string]func(s *db.Session) error{
		"UpsertSession": func(s *db.Session) error { _, err := d.UpsertSession(ctx, s); return err },
		"SaveRun": func(s *db.Session) error {
			_, _, err := d.SaveRun(ctx, s, dbtest.NewRun(s.SessionID, s.SessionID+"-r"))
			return err
		},
		"SaveRunsPiped": func(s *db.Session) error {
			return d.SaveRunsPiped(ctx, nil, []db.PipedRunWrite{{Ctx: ctx, Session: s, Run: dbtest.NewRun(s.SessionID, s.SessionID+"-g")}})
		},
	}
	for name, write := range writes {
		wrap(name, `{"n": 1, "k": [1, 2]}`)
		read := mustRead(t, d, name)
		if !db.SameJSON(read.SessionData, []byte(`{"k":[1,2],"n":1}`)) {
			t.Fatalf("%s: read %s", name, read.SessionData)
		}
		if err := write(dbtest.SessionWith(name, `{"n":2}`, db.ExpectOf(read))); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		wrap(name, `{"n": 3}`)
		if err := write(dbtest.SessionWith(name, `{"n":4}`, db.ExpectOf(read))); !errors.Is(err, db.ErrSessionChanged) {
			t.Errorf("%s over a changed wrapped row: %v, want ErrSessionChanged", name, err)
		}
	}
}

// Two handles on one database (two servers on one Postgres) whose writers
// each read the session, add one to a counter and write expecting what
// they read, reading again when refused, lose no increment.
func TestConditionalWrite_TwoHandlesLoseNoIncrement(t *testing.T) {
	t.Parallel()
	d1 := openFresh(t, postgres.Config{})
	st, _ := sqlstore.FromDB(d1)
	d2, err := postgres.Open(ctx, postgres.Config{DSN: testDSN(), Schema: st.SQLDialect().Schema, MaxOpenConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	dbtest.IncrementRace(t, []*db.DB{d1, d2}, "s")
}
