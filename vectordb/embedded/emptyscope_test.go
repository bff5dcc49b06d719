package embedded

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/vectordb"
)

// A run without a user searches with the empty user's scope: shared rows
// only, each once (the shared graph was walked twice, as the user's and as
// the shared one, and every hit came back twice).
func TestSearch_EmptyUserScopeSeesSharedRowsOnce(t *testing.T) {
	t.Parallel()
	s := openAt(t, filepath.Join(t.TempDir(), "v.db"))
	defer s.Close()
	if err := s.Upsert(context.Background(), []vectordb.Row{
		{ID: "s1", ContentID: "c1", Content: "shared alpha", Vector: vec(1)},
		{ID: "s2", ContentID: "c1", Content: "shared beta", Vector: vec(2)},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Upsert(db.WithUserScope(context.Background(), "bob"), []vectordb.Row{{ID: "b1", ContentID: "c2", Content: "bob alpha", Vector: vec(1)}}); err != nil {
		t.Fatal(err)
	}
	nobody := db.WithUserScope(context.Background(), "")
	for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Hybrid} {
		hits, err := s.Search(nobody, vectordb.Query{Mode: mode, Text: "alpha", Vector: vec(1), Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, h := range hits {
			if seen[h.ID] || h.UserID != "" {
				t.Fatalf("%s: hits %v: %s twice or not shared", mode, ids(hits), h.ID)
			}
			seen[h.ID] = true
		}
		if len(hits) != 2 {
			t.Fatalf("%s: hits %v, want s1 and s2", mode, ids(hits))
		}
	}
}

func ids(hs []vectordb.Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.ID)
	}
	return out
}
