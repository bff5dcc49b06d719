package vectordbtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/vectordb"
)

// ConcurrentReplaces has six writers replace the rows of one content at
// once, spread over stores (one database seen through each: replicas, or
// processes on one file), for five rounds, and checks that each store then
// holds one replace's rows and finds all of them. Every store must be a
// vectordb.ContentReplacer.
func ConcurrentReplaces(t *testing.T, stores ...vectordb.Store) {
	t.Helper()
	reps := make([]vectordb.ContentReplacer, len(stores))
	for i, s := range stores {
		r, ok := s.(vectordb.ContentReplacer)
		if !ok {
			t.Fatalf("store %d (%T) cannot replace a content", i, s)
		}
		reps[i] = r
	}
	ctx := context.Background()
	query := make([]float32, Dims)
	for i := range query {
		query[i] = 1
	}
	const writers, per = 6, 3
	for round := range 5 {
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for w := range writers {
			rows := make([]vectordb.Row, per)
			for i := range rows {
				id := fmt.Sprintf("r%d-w%d-%d", round, w, i)
				rows[i] = vectordb.Row{ID: id, ContentID: "c", ContentHash: fmt.Sprintf("h%d-%d", round, w), Content: "chunk " + id, Vector: axis(i, 0.5)}
			}
			wg.Go(func() { errs[w] = reps[w%len(reps)].ReplaceContent(ctx, "c", rows) })
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
			hits, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: query, Limit: 10})
			if err != nil || len(hits) != per {
				t.Fatalf("round %d, store %d: %d hits (%v), want %d", round, i, len(hits), err, per)
			}
		}
	}
}
