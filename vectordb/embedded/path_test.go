package embedded

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/vectordb"
)

// A path with a character SQLite's URI parser reads as syntax is the file
// it names: "a?b.db" put the rows in a file "a" (and "x?1.db" and "x?2.db"
// in the same one), "c#d.db" in "c", "e%41f.db" in "eAf.db".
func TestOpen_PathWithURISyntaxIsTheFileItNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"a?b.db", "c#d.db", "e%41f.db", "g h.db"} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		s := openAt(t, path)
		if err := s.Upsert(context.Background(), []vectordb.Row{{ID: "x", ContentID: "c", Content: "hello", Vector: vec(1)}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, e := range ents {
			got[e.Name()] = true
		}
		if len(got) != 2 || !got[name] || !got[name+".hnsw"] {
			t.Fatalf("%s: the directory holds %v, want %s and %s.hnsw", name, got, name, name)
		}
		s = openAt(t, path)
		if n, err := s.Count(context.Background()); err != nil || n != 1 {
			t.Fatalf("%s: reopened store counts %d rows (%v), want 1", name, n, err)
		}
		s.Close()
	}
}
