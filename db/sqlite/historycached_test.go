package sqlite_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
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
