package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/vectordb"
	"github.com/agentryhq/agentry/vectordb/vectordbtest"
)

func openAt(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{Path: path, Dimensions: vectordbtest.Dims, EmbedderID: "test-8"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	vectordbtest.Run(t, func(t *testing.T) vectordb.Store {
		s := openAt(t, filepath.Join(t.TempDir(), "v.db"))
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func vec(i int) []float32 {
	v := make([]float32, vectordbtest.Dims)
	v[i%vectordbtest.Dims] = 1
	v[(i+3)%vectordbtest.Dims] = float32(i) / 100
	return v
}

func TestReopen_LoadsSavedGraphsOrRebuilds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.db")
	s := openAt(t, path)
	ctx := db.WithUserScope(context.Background(), "alice")
	var rows []vectordb.Row
	for i := range 50 {
		rows = append(rows, vectordb.Row{ID: fmt.Sprint(i), ContentID: "c", Content: "t", Vector: vec(i)})
	}
	if err := s.Upsert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".hnsw"); err != nil {
		t.Fatalf("graphs not saved: %v", err)
	}
	check := func(s *Store) {
		t.Helper()
		h, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: vec(7), Limit: 1})
		if err != nil || len(h) != 1 || h[0].ID != "7" {
			t.Fatalf("after reopen: %v %v", h, err)
		}
	}
	s = openAt(t, path)
	check(s)
	s.Close()
	// a stale or damaged graph file is ignored: the rows are the truth
	os.WriteFile(path+".hnsw", []byte("garbage"), 0o600)
	s = openAt(t, path)
	check(s)
	s.Close()
}

func TestOpen_RefusesAnotherEmbedder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.db")
	openAt(t, path).Close()
	_, err := Open(context.Background(), Config{Path: path, Dimensions: 8, EmbedderID: "other"})
	if !errors.Is(err, vectordb.ErrEmbedderMismatch) {
		t.Fatalf("err %v", err)
	}
}

func TestOpen_RefusesPreV3TableNamingTheMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// Agno 2.x's vector table: no user_id column.
	if _, err := raw.Exec(`CREATE TABLE agno_vectors (id TEXT PRIMARY KEY, name TEXT, meta_data TEXT, filters TEXT, content TEXT,
		embedding BLOB, usage TEXT, created_at BIGINT, updated_at BIGINT, content_hash TEXT, content_id TEXT)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, err = Open(context.Background(), Config{Path: path, Dimensions: 8, EmbedderID: "x"})
	if !errors.Is(err, vectordb.ErrMigrationRequired) || !contains(err.Error(), "migrate_sql_vectordbs") {
		t.Fatalf("err %v", err)
	}
}

func contains(s, sub string) bool {
	return len(s) >= len(sub) && (s == sub || len(sub) == 0 || indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// A graph file written when the default M was 16 must load as it was
// saved (not be rebuilt, not be searched as if it had the new M's links).
func TestReopen_GraphSavedWithOtherMKeepsItsM(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.db")
	s, err := Open(context.Background(), Config{Path: path, Dimensions: vectordbtest.Dims, EmbedderID: "test-8", M: 16})
	if err != nil {
		t.Fatal(err)
	}
	ctx := db.WithUserScope(context.Background(), "alice")
	var rows []vectordb.Row
	for i := range 50 {
		rows = append(rows, vectordb.Row{ID: fmt.Sprint(i), ContentID: "c", Content: "t", Vector: vec(i)})
	}
	if err := s.Upsert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path) // default M, now 32
	defer s.Close()
	if len(s.parts) == 0 {
		t.Fatal("no graphs after reopen")
	}
	for owner, x := range s.parts {
		if x.m != 16 || x.m0 != 32 {
			t.Fatalf("graph %q reopened with M %d / M0 %d, want the saved 16 / 32", owner, x.m, x.m0)
		}
	}
	h, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: vec(7), Limit: 1})
	if err != nil || len(h) != 1 || h[0].ID != "7" {
		t.Fatalf("search after reopen: %v %v", h, err)
	}
}

// A filter that matches more rows than ExactBelow is answered by walking
// the graphs and keeping the rows it matches (Config.ExactBelow), not
// refused.
func TestSearch_FilterMatchingMoreThanExactBelowWalksTheGraphs(t *testing.T) {
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "v.db"), Dimensions: vectordbtest.Dims, EmbedderID: "test-8", ExactBelow: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	unit := func(i int) []float32 { // spread over the sphere, deterministic; i > 0 (unit(0) is all zeros)
		v := make([]float32, vectordbtest.Dims)
		for d := range v {
			v[d] = float32(math.Sin(float64(i*(d+3)) * 0.7))
		}
		return normalize(v)
	}
	var shared, mine []vectordb.Row
	for i := range 300 {
		kind := "a" // 1 in 6 is "b": 50 rows, more than ExactBelow
		if i%6 == 0 {
			kind = "b"
		}
		r := vectordb.Row{ID: fmt.Sprint("s", i), ContentID: "c", Content: "t", Vector: unit(i + 1), Metadata: map[string]any{"kind": kind}}
		shared = append(shared, r)
		r.ID = fmt.Sprint("m", i)
		r.Vector = unit(i + 1000)
		mine = append(mine, r)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Upsert(context.Background(), shared))
	must(s.Upsert(db.WithUserScope(context.Background(), "bob"), mine))
	alice := db.WithUserScope(context.Background(), "alice")
	// the exact answer: alice sees the shared rows only
	q := unit(7)
	type pair struct {
		id  string
		sim float64
	}
	var want []pair
	for _, r := range shared {
		if r.Metadata["kind"] == "b" {
			want = append(want, pair{r.ID, float64(dot(q, r.Vector))})
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i].sim > want[j].sim })
	for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Hybrid} {
		h, err := s.Search(alice, vectordb.Query{Mode: mode, Vector: q, Text: "t", Limit: 5, Filters: map[string]any{"kind": "b"}})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if len(h) != 5 {
			t.Fatalf("%s: %d hits, want 5", mode, len(h))
		}
		got := map[string]bool{}
		for _, x := range h {
			if x.Metadata["kind"] != "b" || x.UserID != "" {
				t.Fatalf("%s: hit %s %v of %q passes neither the filter nor the scope", mode, x.ID, x.Metadata, x.UserID)
			}
			got[x.ID] = true
		}
		if mode == vectordb.Vector {
			for i := range 5 {
				if h[i].ID != want[i].id {
					t.Fatalf("vector: hits %v, want the exact top 5 %v", h, want[:5])
				}
			}
		}
	}
	// more asked than match: all 50 of them
	h, err := s.Search(alice, vectordb.Query{Mode: vectordb.Vector, Vector: q, Limit: 80, Filters: map[string]any{"kind": "b"}})
	if err != nil || len(h) != 50 {
		t.Fatalf("limit 80: %d hits, %v", len(h), err)
	}
}

// An M or a vector length the index cannot hold is refused at Open (M
// 1<<40 panicked allocating the first node's links; past 133,000
// dimensions the int8 dot product overflows).
func TestOpen_RefusesMAndDimensionsOutOfRange(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{Dimensions: 8, M: 1 << 40}, {Dimensions: 200_000}} {
		cfg.Path, cfg.EmbedderID = filepath.Join(t.TempDir(), "v.db"), "e"
		if s, err := Open(context.Background(), cfg); err == nil {
			s.Close()
			t.Fatalf("M %d, Dimensions %d accepted", cfg.M, cfg.Dimensions)
		}
	}
}
