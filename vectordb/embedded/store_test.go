package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
