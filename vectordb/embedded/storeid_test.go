package embedded

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/vectordb"
)

// A graph file left by an earlier database at the same path (the .db
// deleted to start over, the .hnsw beside it kept) is not taken for the
// new database's graphs when the new one's generation happens to match:
// it was, and a search scored the new rows by the old rows' vectors.
func TestReopen_IgnoresTheGraphFileOfAnotherDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "v.db")
	ctx := context.Background()
	s := openAt(t, path)
	if err := s.Upsert(ctx, []vectordb.Row{
		{ID: "old1", ContentID: "c", Content: "old", Vector: vec(1)},
		{ID: "old2", ContentID: "c", Content: "old", Vector: vec(2)},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // generation 1 saved to v.db.hnsw
		t.Fatal(err)
	}
	for _, f := range []string{"v.db", "v.db-wal", "v.db-shm"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	alice := db.WithUserScope(ctx, "alice")
	s = openAt(t, path)
	if err := s.Upsert(alice, []vectordb.Row{{ID: "new", ContentID: "c", Content: "new", Vector: vec(5)}}); err != nil {
		t.Fatal(err)
	}
	s.sqldb.Close() // the process dies at generation 1: no graphs saved
	s = openAt(t, path)
	defer s.Close()
	h, err := s.Search(alice, vectordb.Query{Mode: vectordb.Vector, Vector: vec(5), Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].ID != "new" || h[0].Score < 0.99 {
		t.Fatalf("hits %+v, want the new row scored about 1", h)
	}
	if h, _ := s.Search(alice, vectordb.Query{Mode: vectordb.Vector, Vector: vec(1), Limit: 5}); len(h) != 1 || h[0].Score > 0.5 {
		t.Fatalf("a query near the deleted rows: hits %+v, want the new row scored low", h)
	}
}
