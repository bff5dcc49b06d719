package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
)

// storeRuns writes a session and one run per id, in order, and returns them
// as stored.
func storeRuns(t *testing.T, d *db.DB, sessionID string, ids ...string) map[string]*db.Run {
	t.Helper()
	ctx := context.Background()
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: sessionID, SessionType: run.TypeAgent, AgentID: "a1"}); err != nil {
		t.Fatal(err)
	}
	out := map[string]*db.Run{}
	for i, id := range ids {
		r, err := db.RunFromOutput(&run.Output{RunID: id, SessionID: sessionID, AgentID: "a1", Status: run.StatusCompleted,
			Content: "answer " + strconv.Itoa(i), CreatedAt: time.Now().Unix()})
		if err != nil {
			t.Fatal(err)
		}
		if out[id], err = d.UpsertRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func cachedOf(r *db.Run) db.CachedRun {
	return db.CachedRun{RunID: r.RunID, UpdatedAt: r.UpdatedAt, Size: len(r.RunData)}
}

// The cached runs reach SQLite as one text of entries; a run id holding the
// text's separators (or their escapes) must match its own entry and no
// other: a cached id that spells another run's entry does not make that
// run's run_data disappear.
func TestHistoryRuns_CachedRunIDsWithSeparators(t *testing.T) {
	t.Parallel()
	d := openTemp(t)
	ids := []string{"a", "a/1", "a;b", "50%", "x/", "x%2F", "plain"}
	stored := storeRuns(t, d, "s", ids...)
	a := stored["a"]
	forged := "x;a/" + strconv.FormatInt(a.UpdatedAt, 10) + "/" + strconv.Itoa(len(a.RunData)) + ";y"
	cached := []db.CachedRun{
		cachedOf(stored["a/1"]), cachedOf(stored["a;b"]), cachedOf(stored["50%"]), cachedOf(stored["x/"]),
		{RunID: forged, UpdatedAt: a.UpdatedAt, Size: len(a.RunData)},                                  // spells a's entry, unescaped
		{RunID: "plain", UpdatedAt: stored["plain"].UpdatedAt, Size: len(stored["plain"].RunData) + 1}, // another size
	}
	omitted := map[string]bool{"a/1": true, "a;b": true, "50%": true, "x/": true}
	for _, read := range []struct {
		name string
		runs func(q db.HistoryQuery) (map[string][]byte, error)
	}{
		{"HistoryRuns", func(q db.HistoryQuery) (map[string][]byte, error) {
			runs, err := d.HistoryRuns(context.Background(), q)
			m := map[string][]byte{}
			for _, r := range runs {
				m[r.RunID] = r.RunData
			}
			return m, err
		}},
		{"SessionHistoryRefs", func(q db.HistoryQuery) (map[string][]byte, error) {
			_, refs, err := d.SessionHistoryRefs(context.Background(), q)
			m := map[string][]byte{}
			for _, r := range refs {
				m[r.RunID] = r.RunData
			}
			return m, err
		}},
	} {
		got, err := read.runs(db.HistoryQuery{SessionID: "s", Limit: 10, Cached: cached})
		if err != nil {
			t.Fatalf("%s: %v", read.name, err)
		}
		if len(got) != len(ids) {
			t.Fatalf("%s: %d runs, want %d", read.name, len(got), len(ids))
		}
		for _, id := range ids {
			if (got[id] == nil) != omitted[id] {
				t.Errorf("%s: run %q: run_data left out = %v, want %v", read.name, id, got[id] == nil, omitted[id])
			}
		}
	}
}

// The history read checks the run's context before it reads (it does not
// watch it while the statement runs): a cancelled run reads nothing.
func TestSessionHistoryRefs_CancelledContext(t *testing.T) {
	t.Parallel()
	d := openTemp(t)
	storeRuns(t, d, "s", "r1", "r2")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, read := range map[string]func() error{
		"SessionHistoryRefs": func() error {
			_, _, err := d.SessionHistoryRefs(ctx, db.HistoryQuery{SessionID: "s", Limit: 3})
			return err
		},
		"SessionHistory": func() error {
			_, _, err := d.SessionHistory(ctx, db.HistoryQuery{SessionID: "s", Limit: 3})
			return err
		},
		"HistoryRuns": func() error { _, err := d.HistoryRuns(ctx, db.HistoryQuery{SessionID: "s", Limit: 3}); return err },
	} {
		if err := read(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", name, err)
		}
	}
}

// The cached runs are matched whatever their order, the runs not cached
// (or cached at another version) come back with their stored run_data, and
// a cached run that is no longer in the history is simply not returned.
func TestSessionHistoryRefs_CachedInAnyOrder(t *testing.T) {
	t.Parallel()
	d := openTemp(t)
	stored := storeRuns(t, d, "s", "r1", "r2", "r3", "r4", "r5")
	stale := cachedOf(stored["r4"])
	stale.UpdatedAt--
	cached := []db.CachedRun{cachedOf(stored["r1"]), stale, cachedOf(stored["r5"]), {RunID: "gone", UpdatedAt: 1, Size: 2}, cachedOf(stored["r2"])}
	_, refs, err := d.SessionHistoryRefs(context.Background(), db.HistoryQuery{SessionID: "s", Limit: 10, Cached: cached})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range refs {
		ids = append(ids, r.RunID)
		omit := r.RunID == "r1" || r.RunID == "r2" || r.RunID == "r5"
		switch {
		case omit && r.RunData != nil:
			t.Errorf("run %s is cached as stored but came back with its run_data", r.RunID)
		case !omit && string(r.RunData) != string(stored[r.RunID].RunData):
			t.Errorf("run %s: run_data %s, want the stored %s", r.RunID, r.RunData, stored[r.RunID].RunData)
		}
		if r.UpdatedAt != stored[r.RunID].UpdatedAt {
			t.Errorf("run %s: updated_at %d, want %d", r.RunID, r.UpdatedAt, stored[r.RunID].UpdatedAt)
		}
	}
	if got := strings.Join(ids, ","); got != "r1,r2,r3,r4,r5" {
		t.Fatalf("history %s, want r1,r2,r3,r4,r5", got)
	}
}

// A run the caller does not hold whose run_data no longer decodes is
// reported as the read without cached runs reports it (SessionHistory's
// corrupt run), not returned as a run without run_data.
func TestSessionHistoryRefs_UncachedCorruptRunAsWithoutCache(t *testing.T) {
	t.Parallel()
	d := openTemp(t)
	stored := storeRuns(t, d, "s", "r1", "r2", "r3")
	w := d.Driver().(db.SQLWriter).SQLWriter().DB
	if _, err := w.Exec(`UPDATE agno_runs SET run_data = '{"run_id":' WHERE run_id = 'r2'`); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	read := func(cached []db.CachedRun) ([]db.HistoryRef, error) {
		_, refs, err := d.SessionHistoryRefs(ctx, db.HistoryQuery{SessionID: "s", Limit: 10, Cached: cached})
		return refs, err
	}
	want, wantErr := read(nil)
	if !errors.Is(wantErr, db.ErrCorruptRow) {
		t.Fatalf("without cached runs: %v, want ErrCorruptRow", wantErr)
	}
	got, err := read([]db.CachedRun{cachedOf(stored["r1"]), cachedOf(stored["r3"])})
	if err == nil || err.Error() != wantErr.Error() || len(got) != len(want) {
		t.Fatalf("with r1 and r3 cached: %d refs, %v; want %d refs, %v", len(got), err, len(want), wantErr)
	}
}

// While another writer keeps changing a run the reader does not hold, every
// history read returns that run's run_data at the updated_at it reports:
// never the run_data of a later write with the updated_at of an earlier one
// (the cached read takes the metadata and the run_data in two statements).
func TestSessionHistoryRefs_UncachedRunChangingUnderTheRead(t *testing.T) {
	t.Parallel()
	d := openTemp(t)
	stored := storeRuns(t, d, "s", "r1", "r2", "r3")
	w := d.Driver().(db.SQLWriter).SQLWriter().DB
	ctx := context.Background()
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		for v := 1; ; v++ {
			select {
			case <-stop:
				writerDone <- nil
				return
			default:
			}
			data := `{"run_id":"r2","v":` + strconv.Itoa(v) + `,"pad":"` + strings.Repeat("x", v%7) + `"}`
			if _, err := w.ExecContext(ctx, `UPDATE agno_runs SET run_data = ?, updated_at = ? WHERE run_id = 'r2'`, data, v); err != nil {
				writerDone <- err
				return
			}
		}
	}()
	cached := []db.CachedRun{cachedOf(stored["r3"]), cachedOf(stored["r1"])}
	deadline := time.Now().Add(300 * time.Millisecond)
	reads, again := 0, 0
	for time.Now().Before(deadline) || reads < 50 {
		_, refs, err := d.SessionHistoryRefs(ctx, db.HistoryQuery{SessionID: "s", Limit: 10, Cached: cached})
		if err != nil {
			t.Fatal(err)
		}
		reads++
		if len(refs) != 3 || refs[0].RunID != "r1" || refs[1].RunID != "r2" || refs[2].RunID != "r3" {
			t.Fatalf("read %d: %d refs, want r1, r2, r3", reads, len(refs))
		}
		// A read that saw r2 change between its statements starts again
		// without the cached runs: r1 and r3 then come with their run_data.
		if refs[0].RunData != nil {
			again++
		}
		for _, r := range []db.HistoryRef{refs[0], refs[2]} {
			if r.RunData != nil && string(r.RunData) != string(stored[r.RunID].RunData) {
				t.Fatalf("read %d: %s's run_data %s, want the stored %s", reads, r.RunID, r.RunData, stored[r.RunID].RunData)
			}
		}
		var got struct{ V int64 }
		if err := json.Unmarshal(refs[1].RunData, &got); err != nil {
			t.Fatalf("read %d: r2's run_data %s: %v", reads, refs[1].RunData, err)
		}
		if got.V != 0 && got.V != refs[1].UpdatedAt {
			t.Fatalf("read %d: r2 at updated_at %d came back with the run_data of version %d", reads, refs[1].UpdatedAt, got.V)
		}
	}
	close(stop)
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d reads, %d read again in one statement", reads, again)
}

// A history with more uncached runs than the second statement names at once
// is read in one statement: every run comes back, with its run_data.
func TestSessionHistoryRefs_ManyUncachedRuns(t *testing.T) {
	t.Parallel()
	d := openTemp(t)
	ids := make([]string, 300)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%03d", i)
	}
	stored := storeRuns(t, d, "s", ids...)
	_, refs, err := d.SessionHistoryRefs(context.Background(), db.HistoryQuery{SessionID: "s", Limit: len(ids),
		Cached: []db.CachedRun{cachedOf(stored["r299"])}})
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != len(ids) {
		t.Fatalf("%d refs, want %d", len(refs), len(ids))
	}
	for i, r := range refs {
		if r.RunID != ids[i] || string(r.RunData) != string(stored[r.RunID].RunData) {
			t.Fatalf("ref %d: %s with run_data %s, want %s with the stored run_data", i, r.RunID, r.RunData, ids[i])
		}
	}
}

// With cached runs the history's run rows come from SQLite as one text of
// entries (sizedRefEntry). Whatever a row holds, the read with the caller's
// cache answers as the read without it: the same runs in the same order at
// the same updated_at, the same failure, and run_data left out only for a
// run cached as stored. The cases are what the entries' parser must not
// misread: ids holding the separators, NULLs, ties, values that are not
// integers (run_data is NOT NULL in the schema).
func TestSessionHistoryRefs_CachedRowsAsWithoutCache(t *testing.T) {
	t.Parallel()
	ids := []string{"r1", "r2", "r3", "r4", "r5"}
	for _, tc := range []struct {
		name  string
		ids   []string
		alter string // run on the runs table after the writes
	}{
		{name: "plain"},
		{name: "separators in ids", ids: []string{"a,b", "c:d", "1,2,3,4:x", "5:", ",", "é€ü", "x"}},
		{name: "NULL run_index", alter: "UPDATE agno_runs SET run_index = NULL WHERE run_id = 'r4'"},
		{name: "NULL run_index of the oldest", alter: "UPDATE agno_runs SET run_index = NULL WHERE run_id = 'r1'"},
		{name: "tied run_index", alter: "UPDATE agno_runs SET run_index = (SELECT run_index FROM agno_runs WHERE run_id = 'r5') WHERE run_id = 'r4'"},
		{name: "tie past the limit", alter: "UPDATE agno_runs SET run_index = (SELECT run_index FROM agno_runs WHERE run_id = 'r2') WHERE run_id = 'r1'"},
		{name: "REAL run_index", alter: "UPDATE agno_runs SET run_index = 3.5 WHERE run_id = 'r3'"},
		{name: "negative run_index", alter: "UPDATE agno_runs SET run_index = -7 WHERE run_id = 'r1'"},
		{name: "NULL updated_at", alter: "UPDATE agno_runs SET updated_at = NULL WHERE run_id = 'r5'"},
		{name: "text updated_at", alter: "UPDATE agno_runs SET updated_at = 'soon' WHERE run_id = 'r5'"},
		{name: "text updated_at with separators", alter: "UPDATE agno_runs SET updated_at = '1,2:3' WHERE run_id = 'r5'"},
		{name: "REAL updated_at", alter: "UPDATE agno_runs SET updated_at = 1.5 WHERE run_id = 'r2'"},
		{name: "text run_index with separators", alter: "UPDATE agno_runs SET run_index = '9,9,9,2:r1' WHERE run_id = 'r3'"},
		{name: "run_data not JSON", alter: "UPDATE agno_runs SET run_data = '{not json' WHERE run_id = 'r2'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := openTemp(t)
			runIDs := ids
			if tc.ids != nil {
				runIDs = tc.ids
			}
			stored := storeRuns(t, d, "s", runIDs...)
			if tc.alter != "" {
				st, _ := sqlstore.FromDB(d)
				if _, err := st.SQL().ExecContext(context.Background(), tc.alter); err != nil {
					t.Fatal(err)
				}
			}
			var cached []db.CachedRun
			for i := len(runIDs) - 1; i >= 0; i-- {
				cached = append(cached, cachedOf(stored[runIDs[i]]))
			}
			for _, limit := range []int{2, 3, 10} {
				ctx := context.Background()
				_, want, wantErr := d.SessionHistoryRefs(ctx, db.HistoryQuery{SessionID: "s", Limit: limit})
				_, got, gotErr := d.SessionHistoryRefs(ctx, db.HistoryQuery{SessionID: "s", Limit: limit, Cached: cached})
				// A value that is not an integer leaves its run out of both
				// reads, reported as corrupt (both through SessionHistory).
				if (wantErr == nil) != (gotErr == nil) {
					t.Fatalf("limit %d: with the cache: %v; without: %v", limit, gotErr, wantErr)
				}
				if len(got) != len(want) {
					t.Fatalf("limit %d: %d runs with the cache, %d without", limit, len(got), len(want))
				}
				for i := range want {
					g, w := got[i], want[i]
					if g.RunID != w.RunID || g.UpdatedAt != w.UpdatedAt {
						t.Fatalf("limit %d: run %d is %q at %d with the cache, %q at %d without", limit, i, g.RunID, g.UpdatedAt, w.RunID, w.UpdatedAt)
					}
					s := stored[w.RunID]
					asStored := s != nil && w.UpdatedAt == s.UpdatedAt && string(w.RunData) == string(s.RunData)
					switch {
					case g.RunData == nil && !asStored:
						t.Errorf("limit %d: run %q left out, but it is not as the cache holds it", limit, g.RunID)
					case g.RunData != nil && string(g.RunData) != string(w.RunData):
						t.Errorf("limit %d: run %q: run_data %s with the cache, %s without", limit, g.RunID, g.RunData, w.RunData)
					}
				}
			}
		})
	}
}
