package pgvector

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/vectordb"
)

// Replaces of one content's rows at the same time (two replicas indexing
// one upload) leave one replace's rows: each takes the content's lock, so
// the later one's delete sees the earlier one's rows. Without it, each
// delete ran before the other's rows were committed and both sets stayed.
func TestReplaceContent_ConcurrentReplacesLeaveOneSet(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	const writers, per = 6, 3
	for round := range 5 {
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for w := range writers {
			rows := make([]vectordb.Row, per)
			for i := range rows {
				v := make([]float32, 8)
				v[i] = 1
				id := fmt.Sprintf("r%d-w%d-%d", round, w, i)
				rows[i] = vectordb.Row{ID: id, ContentID: "c", ContentHash: fmt.Sprintf("h%d-%d", round, w), Content: "chunk " + id, Vector: v}
			}
			wg.Go(func() { errs[w] = s.ReplaceContent(ctx, "c", rows) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n != per {
			t.Fatalf("round %d: %d rows stored, want one replace's %d", round, n, per)
		}
	}
}
