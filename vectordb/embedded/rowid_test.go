package embedded

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/vectordb"
)

// SQLite gives a new row the largest rowid plus one, so a deleted last row's
// rowid goes to the next insert. A search ranks rowids, then loads them: a
// row deleted in between and another row inserted under its rowid must not
// come back when the searcher may not see it (another user's: it did, the
// load had no scope) or the filters do not match it.
func TestSearch_RowidReusedBetweenRankAndLoadIsNotReturned(t *testing.T) {
	alice := db.WithUserScope(context.Background(), "alice")
	bob := db.WithUserScope(context.Background(), "bob")
	cases := []struct {
		name    string
		as      context.Context // who inserts the row that takes the rowid
		filters map[string]any
	}{
		{"another user", bob, nil},
		{"filters", alice, map[string]any{"kind": "a"}},
	}
	for _, c := range cases {
		for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Keyword, vectordb.Hybrid} {
			t.Run(c.name+"/"+string(mode), func(t *testing.T) {
				s := openAt(t, filepath.Join(t.TempDir(), "v.db"))
				defer s.Close()
				if err := s.Upsert(alice, []vectordb.Row{{ID: "a1", ContentID: "c1", Content: "alpha notes", Vector: vec(1),
					Metadata: map[string]any{"kind": "a"}}}); err != nil {
					t.Fatal(err)
				}
				s.afterRank = func() {
					s.afterRank = nil
					if err := s.DeleteContent(alice, "c1"); err != nil {
						t.Error(err)
					}
					if err := s.Upsert(c.as, []vectordb.Row{{ID: "x1", ContentID: "c2", Content: "alpha other", Vector: vec(1),
						Metadata: map[string]any{"kind": "b"}}}); err != nil {
						t.Error(err)
					}
				}
				hits, err := s.Search(alice, vectordb.Query{Mode: mode, Text: "alpha", Vector: vec(1), Limit: 5, Filters: c.filters})
				if err != nil {
					t.Fatal(err)
				}
				if s.afterRank != nil {
					t.Fatal("the search loaded no rows")
				}
				for _, h := range hits {
					if h.UserID != "alice" && h.UserID != "" || c.filters != nil && h.Metadata["kind"] != "a" {
						t.Fatalf("alice's search returned %s of user %q with %v: %q", h.ID, h.UserID, h.Metadata, h.Content)
					}
				}
			})
		}
	}
}
