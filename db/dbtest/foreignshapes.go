package dbtest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// Timestamps another writer stored as a REAL (Python's time.time()) or as
// numeric text: the second they name is read (truncated; Postgres and MySQL
// round such a value into their BIGINT columns, so the fractions below are
// under one half), never refused. Agno declares these columns BigInteger
// and writes int(time.time()); SQLite keeps the REAL of a writer that
// forgets the int().
var foreignShapeTests = map[string]func(t *testing.T, d *db.DB){
	"Session_RealTimestampsAreRead": func(t *testing.T, d *db.DB) {
		seedRuns(t, d, "s", 2)
		foreignSet(t, d, sessionsTable, "session_id", "s", "created_at = 1733000000.25, updated_at = 1733000100.4")
		foreignSet(t, d, runsTable, "run_id", "s-r1", "created_at = 1733000050.3, updated_at = '1733000060'")
		s, err := d.GetSession(bg, "s")
		noErr(t, err)
		equal(t, "GetSession times", [2]int64{s.CreatedAt, s.UpdatedAt}, [2]int64{1733000000, 1733000100})
		s, runs, err := d.SessionHistory(bg, db.HistoryQuery{SessionID: "s", Limit: 10})
		noErr(t, err)
		equal(t, "SessionHistory session created_at", s.CreatedAt, int64(1733000000))
		equal(t, "SessionHistory runs", runIDs(runs), []string{"s-r0", "s-r1"})
		equal(t, "SessionHistory run times", [2]int64{runs[1].CreatedAt, runs[1].UpdatedAt}, [2]int64{1733000050, 1733000060})
		s, refs, err := d.SessionHistoryRefs(bg, db.HistoryQuery{SessionID: "s", Limit: 10})
		noErr(t, err)
		equal(t, "SessionHistoryRefs session created_at", s.CreatedAt, int64(1733000000))
		equal(t, "SessionHistoryRefs runs", len(refs), 2)
		r, err := d.GetRun(bg, "s-r1")
		noErr(t, err)
		equal(t, "GetRun created_at", r.CreatedAt, int64(1733000050))
		// A turn on the session writes it and a run back over those rows.
		_, err = d.UpsertSession(bg, &db.Session{SessionID: "s", SessionType: s.SessionType, UpdatedAt: 1733000200})
		noErr(t, err)
		nr := NewRun("s", "s-r1")
		nr.UpdatedAt = 1733000300
		got := mustRun(t, bg, d, nr)
		equal(t, "UpsertRun over a REAL created_at", got.CreatedAt, int64(1733000050))
	},
	"Memory_RealTimestampsAreRead": func(t *testing.T, d *db.DB) {
		if _, err := d.UpsertMemory(bg, &db.Memory{MemoryID: "m", Memory: "fact", UserID: "u"}); err != nil {
			t.Fatal(err)
		}
		foreignSet(t, d, memoriesTable, "memory_id", "m", "created_at = 1733000000.25, updated_at = 1733000100.4")
		m, err := d.GetMemory(bg, "m")
		noErr(t, err)
		equal(t, "GetMemory times", [2]int64{m.CreatedAt, m.UpdatedAt}, [2]int64{1733000000, 1733000100})
		ms, _, err := d.ListMemories(bg, db.MemoryFilter{Limit: 10, Page: 1})
		noErr(t, err)
		equal(t, "ListMemories", len(ms), 1)
	},
	// A run no one can read (a created_at that is no number) is left out of
	// the day's counts; the other runs of the day are still counted.
	"RefreshMetrics_UndecodableRunIsLeftOut": func(t *testing.T, d *db.DB) {
		day := time.Date(2024, 12, 1, 0, 0, 0, 0, time.UTC)
		mustSession(t, bg, d, db.Session{SessionID: "s", CreatedAt: day.Unix() + 10})
		for i := range 3 {
			r := NewRun("s", fmt.Sprintf("s-r%d", i))
			r.CreatedAt = day.Unix() + 100 + int64(i)
			mustRun(t, bg, d, r)
		}
		foreignSet(t, d, runsTable, "run_id", "s-r0", "created_at = 1733011200.3")
		// JSON null: a JSON column takes it on every database.
		foreignSet(t, d, runsTable, "run_id", "s-r1", "run_data = 'null', status = NULL")
		rows, err := d.RefreshMetricsAt(bg, day.Add(36*time.Hour))
		var ce *db.CorruptRowError
		if !errors.As(err, &ce) || ce.ID != "s-r1" {
			t.Fatalf("RefreshMetrics error = %v, want s-r1 reported", err)
		}
		var runs int64
		for _, r := range rows {
			if r.Date == "2024-12-01" {
				runs += r.AgentRunsCount
			}
		}
		if runs != 2 {
			t.Fatalf("agent runs counted on 2024-12-01 = %d, want the two healthy ones (rows %+v)", runs, rows)
		}
	},

	// A page of the metrics' run reader that ends on a run whose
	// created_at is another writer's REAL neither reads it again nor skips
	// the runs stored after it in the same second; a run that does not
	// decode is passed and reported, not the end of the day.
	"RunsCreatedIn_PagesOverRealAndUndecodableRows": func(t *testing.T, d *db.DB) {
		md, ok := d.Driver().(db.MetricsDriver)
		if !ok {
			t.Fatal("the driver stores no metrics")
		}
		const sec = 1733011200
		mustSession(t, bg, d, db.Session{SessionID: "s"})
		// run_ids against the order of the stored values: e before d, …
		stamps := map[string]string{"a": "1733011200.4", "b": "1733011200.3", "c": "1733011200.2", "d": "1733011200.1", "e": "1733011200", "f": "1733011200.35"}
		for id, at := range stamps {
			r := NewRun("s", id)
			r.CreatedAt = sec
			mustRun(t, bg, d, r)
			foreignSet(t, d, runsTable, "run_id", id, "created_at = "+at)
		}
		foreignSet(t, d, runsTable, "run_id", "f", "run_data = 'null'")
		seen := map[string]int{}
		var reported []string
		after := &db.RunCursor{CreatedAt: sec - 1}
		for pages := 0; after != nil; pages++ {
			if pages > 10 {
				t.Fatalf("RunsCreatedIn does not end: seen %v", seen)
			}
			runs, next, err := md.RunsCreatedIn(bg, sec, sec+1, *after, 2)
			if err != nil {
				var ce *db.CorruptRowError
				if !errors.As(err, &ce) {
					t.Fatalf("RunsCreatedIn: %v", err)
				}
				reported = append(reported, ce.ID)
			}
			for _, r := range runs {
				seen[r.RunID]++
				if r.CreatedAt != sec {
					t.Fatalf("run %s created_at = %d, want %d", r.RunID, r.CreatedAt, sec)
				}
			}
			after = next
		}
		equal(t, "reported", reported, []string{"f"})
		equal(t, "runs read", seen, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1})
	},
	// run_data that is JSON but no object (Postgres's JSONB takes a
	// string, a number or an array as readily as an object) is no run: it
	// is reported as a corrupt row, left out of lists and history, and a
	// single read names it, instead of decoding later into a 500.
	"Run_RunDataOfTheWrongJSONTypeIsACorruptRow": func(t *testing.T, d *db.DB) {
		for i, shape := range []string{`'"a string"'`, `'[1, 2]'`, `'42'`} {
			sid := fmt.Sprintf("s%d", i)
			seedRuns(t, d, sid, 3)
			bad := sid + "-r1"
			foreignSet(t, d, runsTable, "run_id", bad, "run_data = "+shape)
			got, _, err := d.GetRuns(bg, db.RunFilter{SessionID: sid, Limit: 10, Page: 1})
			wantReported(t, "GetRuns "+shape, runIDs(got), err, bad, sid+"-r0", sid+"-r2")
			_, runs, err := d.SessionHistory(bg, db.HistoryQuery{SessionID: sid, Limit: 10})
			wantReported(t, "SessionHistory "+shape, runIDs(runs), err, bad, sid+"-r0", sid+"-r2")
			runs, err = d.HistoryRuns(bg, db.HistoryQuery{SessionID: sid, Limit: 10})
			wantReported(t, "HistoryRuns "+shape, runIDs(runs), err, bad, sid+"-r0", sid+"-r2")
			_, err = d.GetRun(bg, bad)
			var ce *db.CorruptRowError
			if !errors.As(err, &ce) || ce.ID != bad {
				t.Fatalf("GetRun %s = %v, want a *db.CorruptRowError naming it", shape, err)
			}
		}
	},
}

// wantReported checks a list holds the healthy rows and reports the
// foreign one as a *db.CorruptRowError, without listing it.
func wantReported(t *testing.T, what string, got []string, err error, foreign string, healthy ...string) {
	t.Helper()
	var ce *db.CorruptRowError
	if !errors.As(err, &ce) || ce.ID != foreign {
		t.Fatalf("%s = %v, error %v, want %s reported", what, got, err, foreign)
	}
	equal(t, what, got, healthy)
}

// foreignSet runs "UPDATE table SET set WHERE key = id" behind the driver's
// back, as another process would. A database that refuses the values (a
// JSON column that takes only JSON, an integer column that takes no text)
// cannot hold that shape: the test goes on without it (false).
func foreignSet(t *testing.T, d *db.DB, table func(sqlstore.Tables) string, key, id, set string) bool {
	t.Helper()
	st, ok := sqlstore.FromDB(d)
	if !ok {
		t.Fatal("not a SQL driver")
	}
	dl := st.SQLDialect()
	stmt := dl.Bind(fmt.Sprintf("UPDATE %s SET %s WHERE %s = ?", dl.Table(table(st.Tables())), set, key))
	res, err := st.SQL().ExecContext(bg, stmt, id)
	if err != nil {
		t.Logf("%s refused %s: %v", dl.Name, stmt, err)
		return false
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("%s: %d rows, want 1", stmt, n)
	}
	return true
}

// foreignNonFiniteTests: Agno's SQLite writer writes a float that is not
// finite as Python's json does (NaN, Infinity), which JSON has no words
// for. One such run made its session's runs unreadable (a corrupt row);
// it reads with null in their place. Postgres and MySQL refuse such text
// in a JSON column (the shape is skipped there).
var foreignNonFiniteTests = map[string]func(t *testing.T, d *db.DB){
	"Run_NaNAndInfinityFromPythonReadAsNull": func(t *testing.T, d *db.DB) {
		seedRuns(t, d, "s", 3)
		if !foreignSet(t, d, runsTable, "run_id", "s-r1",
			`run_data = '{"run_id":"s-r1","session_id":"s","agent_id":"a","status":"COMPLETED","metrics":{"time_to_first_token":NaN,"duration":Infinity},"content":"NaN"}'`) {
			return
		}
		got, _, err := d.GetRuns(bg, db.RunFilter{SessionID: "s", Limit: 10, Page: 1})
		noErr(t, err)
		equal(t, "runs", len(got), 3)
		_, runs, err := d.SessionHistory(bg, db.HistoryQuery{SessionID: "s", Limit: 10})
		noErr(t, err)
		equal(t, "history runs", len(runs), 3)
		r, err := d.GetRun(bg, "s-r1")
		noErr(t, err)
		out, err := r.Output()
		noErr(t, err)
		equal(t, "content", out.ContentString(), "NaN")
	},
}
