package sqlstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
	_ "modernc.org/sqlite"
)

// TestFillUncached reads the second statement of SQLite's cached history
// read on a real SQLite file: it fills the run_data of the runs the first
// statement saw, and asks for the one-statement read again (whole) when a
// run is gone, changed (updated_at or size) or no longer decodes between the
// two statements, instead of returning a run_data of another version.
func TestFillUncached(t *testing.T) {
	t.Parallel()
	pool, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	ctx := context.Background()
	if _, err := pool.ExecContext(ctx, `CREATE TABLE runs (run_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, run_data TEXT NOT NULL, updated_at BIGINT)`); err != nil {
		t.Fatal(err)
	}
	put := func(id, session, data string, updated any) {
		t.Helper()
		if _, err := pool.ExecContext(ctx, `INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?)`, id, session, data, updated); err != nil {
			t.Fatal(err)
		}
	}
	s := &Store{d: &Dialect{Name: "sqlite"}, runs: "runs"}
	const a, b = `{"run_id":"a"}`, `{"run_id":"b","n":1}`
	seen := func(ref int, updated int64, data string) uncachedRun {
		return uncachedRun{ref: ref, updatedAt: updated, updValid: true, size: int64(len(data))}
	}
	for _, tc := range []struct {
		name      string
		setup     func()
		wantWhole bool
	}{
		{"as seen", func() { put("a", "s", a, 10); put("b", "s", b, 20) }, false},
		{"updated_at changed", func() { put("a", "s", a, 10); put("b", "s", b, 21) }, true},
		{"size changed", func() { put("a", "s", a, 10); put("b", "s", `{"run_id":"b","n":10}`, 20) }, true},
		{"updated_at NULL", func() { put("a", "s", a, 10); put("b", "s", b, nil) }, true},
		{"gone", func() { put("a", "s", a, 10); pool.ExecContext(ctx, `DELETE FROM runs WHERE run_id = 'b'`) }, true},
		{"moved to another session", func() { put("a", "s", a, 10); put("b", "s2", b, 20) }, true},
		{"does not decode", func() { put("a", "s", a, 10); put("b", "s", `{"run_id":"b","n"::}`, 20) }, true},
	} {
		tc.setup()
		refs := []db.HistoryRef{{RunID: "x", UpdatedAt: 5}, {RunID: "a", UpdatedAt: 10}, {RunID: "b", UpdatedAt: 20}}
		whole, err := s.fillUncached(ctx, pool, "s", refs, []uncachedRun{seen(1, 10, a), seen(2, 20, b)})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if whole != tc.wantWhole {
			t.Fatalf("%s: whole = %v, want %v", tc.name, whole, tc.wantWhole)
		}
		if whole {
			continue
		}
		if refs[0].RunData != nil || string(refs[1].RunData) != a || string(refs[2].RunData) != b {
			t.Fatalf("%s: run_data %q %q %q, want only a's and b's filled", tc.name, refs[0].RunData, refs[1].RunData, refs[2].RunData)
		}
	}
	// A run stored without updated_at, read so by both statements, is
	// filled (not read a third time).
	put("b", "s", b, nil)
	refs := []db.HistoryRef{{RunID: "b"}}
	whole, err := s.fillUncached(ctx, pool, "s", refs, []uncachedRun{{ref: 0, size: int64(len(b))}})
	if err != nil || whole || string(refs[0].RunData) != b {
		t.Fatalf("NULL updated_at seen by both statements: whole = %v, run_data %q, %v; want b's run_data", whole, refs[0].RunData, err)
	}
}

// TestSizedHistory_CachedAs checks the match of a row against the caller's
// cache: id, updated_at and size must all agree, NULLs never match, and the
// cache's order does not matter (only where the search starts).
func TestSizedHistory_CachedAs(t *testing.T) {
	t.Parallel()
	cached := []db.CachedRun{{RunID: "r3", UpdatedAt: 30, Size: 3}, {RunID: "r2", UpdatedAt: 20, Size: 2}, {RunID: "r1", UpdatedAt: 10, Size: 1}}
	h := &sizedHistory{cached: cached}
	for _, tc := range []struct {
		id             string
		upd            int64
		updOK          bool
		size           int64
		sizeOK, wanted bool
	}{
		{"r3", 30, true, 3, true, true},
		{"r1", 10, true, 1, true, true}, // out of order: found by wrapping
		{"r2", 20, true, 2, true, true},
		{"r2", 21, true, 2, true, false},
		{"r2", 20, true, 5, true, false},
		{"r2", 20, false, 2, true, false},
		{"r2", 20, true, 2, false, false},
		{"r9", 20, true, 2, true, false},
	} {
		if got := h.cachedAs(tc.id, tc.upd, tc.updOK, tc.size, tc.sizeOK); got != tc.wanted {
			t.Errorf("cachedAs(%q, %d, %v, %d, %v) = %v, want %v", tc.id, tc.upd, tc.updOK, tc.size, tc.sizeOK, got, tc.wanted)
		}
	}
}
