package embedded

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/vectordb"
)

// Replaces of one content's rows at the same time by two processes on
// one file leave one replace's rows, and each store's graphs find them.
func TestReplaceContent_ConcurrentReplacesOnOneFileLeaveOneSet(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v.db")
	stores := []*Store{openAt(t, path), openAt(t, path)}
	for _, s := range stores {
		defer s.Close()
	}
	ctx := context.Background()
	const writers, per = 6, 3
	for round := range 5 {
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for w := range writers {
			rows := make([]vectordb.Row, per)
			for i := range rows {
				id := fmt.Sprintf("r%d-w%d-%d", round, w, i)
				rows[i] = vectordb.Row{ID: id, ContentID: "c", Content: "chunk " + id, Vector: vec(i + 1)}
			}
			wg.Go(func() { errs[w] = stores[w%2].ReplaceContent(ctx, "c", rows) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		for i, s := range stores {
			if n, err := s.Count(ctx); err != nil || n != per {
				t.Fatalf("round %d, store %d: %d rows (%v), want one replace's %d", round, i, n, err, per)
			}
			hits, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: vec(1), Limit: 10})
			if err != nil || len(hits) != per {
				t.Fatalf("round %d, store %d: %d hits (%v), want %d", round, i, len(hits), err, per)
			}
		}
	}
}
