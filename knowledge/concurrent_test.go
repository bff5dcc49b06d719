package knowledge

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/vectordb"
)

// gatedStore is the real vector store with a gate: the first Upsert waits
// for release, and the second DeleteContent is announced on deleted.
type gatedStore struct {
	vectordb.Store
	upserting, deleted, release chan struct{}
	mu                          sync.Mutex
	upserts, deletes            int
}

func (g *gatedStore) Upsert(ctx context.Context, rows []vectordb.Row) error {
	g.mu.Lock()
	g.upserts++
	first := g.upserts == 1
	g.mu.Unlock()
	if first {
		close(g.upserting)
		<-g.release
	}
	return g.Store.Upsert(ctx, rows)
}

func (g *gatedStore) DeleteContent(ctx context.Context, contentID string) error {
	g.mu.Lock()
	g.deletes++
	if g.deletes == 2 {
		close(g.deleted)
	}
	g.mu.Unlock()
	return g.Store.DeleteContent(ctx, contentID)
}

// Two inserts of one content with different bytes (a file uploaded again
// while its first upload is still indexing) leave one set of chunks: the
// second waits for the first. Interleaved, the second deleted the content's
// (still empty) chunks, upserted its own, and then the first upserted too,
// so every search found both versions.
func TestInsert_TwoInsertsOfOneContentLeaveOneSetOfChunks(t *testing.T) {
	t.Parallel()
	var g *gatedStore
	k := newKB(t, testdbs.SQLite(t), func(c *Config) {
		g = &gatedStore{Store: c.Vectors, upserting: make(chan struct{}), deleted: make(chan struct{}), release: make(chan struct{})}
		c.Vectors = g
	})
	ctx := context.Background()
	upload := func(text string) Content {
		return Content{Name: "notes", Filename: "notes.txt", Data: []byte(text)}
	}
	var wg sync.WaitGroup
	var first, second *Result
	var err1, err2 error
	wg.Go(func() { first, err1 = k.Insert(ctx, upload("Mars has two moons.")) })
	<-g.upserting // the first insert has deleted the old chunks and is upserting
	wg.Go(func() { second, err2 = k.Insert(ctx, upload("Jupiter has ninety-five moons.")) })
	select {
	case <-g.deleted: // interleaved: the second deleted before the first upserted
	case <-time.After(200 * time.Millisecond): // waiting for the first, as it must
	}
	close(g.release)
	wg.Wait()
	if err1 != nil || err2 != nil {
		t.Fatalf("inserts: %v, %v", err1, err2)
	}
	if first.Content.ID != second.Content.ID {
		t.Fatalf("not one content: %s and %s", first.Content.ID, second.Content.ID)
	}
	n, err := g.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != second.Chunks {
		t.Fatalf("%d chunks stored, want the second insert's %d alone", n, second.Chunks)
	}
	hits, err := k.Search(ctx, "moons", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Content != "Jupiter has ninety-five moons." {
			t.Errorf("hit %q, want only the second version", h.Content)
		}
	}
}
