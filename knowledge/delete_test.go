package knowledge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/embedder"
	"github.com/agentryhq/agentry/vectordb"
)

// gatedEmbedder announces its first Embed on embedding and holds it until
// release is closed or its context ends.
type gatedEmbedder struct {
	embedder.Embedder
	embedding, release chan struct{}
	once               sync.Once
}

func (g *gatedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.embedding)
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Embedder.Embed(ctx, texts)
}

// A content deleted by another process while its insert is embedding
// leaves no vectors: the insert, finding its row gone when it records the
// outcome, drops the chunks it wrote (before, they stayed and every search
// found them, with no content row to delete them by).
func TestDelete_ByAnotherProcessDuringInsertLeavesNoVectors(t *testing.T) {
	t.Parallel()
	var g *gatedEmbedder
	k := newKB(t, testdbs.SQLite(t), func(c *Config) {
		g = &gatedEmbedder{Embedder: c.Embedder, embedding: make(chan struct{}), release: make(chan struct{})}
		c.Embedder = g
	})
	ctx := context.Background()
	row, err := k.InsertAsync(ctx, Content{Text: "Saturn's rings are mostly ice."})
	if err != nil {
		t.Fatal(err)
	}
	<-g.embedding
	other, err := New(k.cfg) // another process on the same database and store
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(ctx, row.ID); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	k.Wait()
	if n, err := k.cfg.Vectors.Count(ctx); err != nil || n != 0 {
		t.Fatalf("%d vectors (err %v) left of deleted content", n, err)
	}
	if _, err := k.Get(ctx, row.ID); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("deleted row: %v", err)
	}
}

// deleteGatedStore holds the first Upsert until released; a DeleteContent
// made while it is held releases it and returns only once the insert is
// over: Knowledge.Delete's vector delete lands before the insert's upsert
// and its row delete after the insert recorded COMPLETED.
type deleteGatedStore struct {
	vectordb.Store
	upserting, release, inserted chan struct{}
	mu                           sync.Mutex
	upserts                      int
	held                         bool
}

func (g *deleteGatedStore) Upsert(ctx context.Context, rows []vectordb.Row) error {
	g.mu.Lock()
	g.upserts++
	first := g.upserts == 1
	g.held = first
	g.mu.Unlock()
	if first {
		close(g.upserting)
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Store.Upsert(ctx, rows)
}

func (g *deleteGatedStore) DeleteContent(ctx context.Context, contentID string) error {
	g.mu.Lock()
	held := g.held
	g.held = false
	g.mu.Unlock()
	err := g.Store.DeleteContent(ctx, contentID)
	if held {
		close(g.release)
		<-g.inserted
	}
	return err
}

// Delete waits for (and stops) an insert of the content in progress: its
// vector delete and row delete cannot straddle the insert's upsert and
// status update, which left the chunks behind with no content row.
func TestDelete_StopsAnInsertInProgress(t *testing.T) {
	t.Parallel()
	var g *deleteGatedStore
	k := newKB(t, testdbs.SQLite(t), func(c *Config) {
		g = &deleteGatedStore{Store: c.Vectors, upserting: make(chan struct{}), release: make(chan struct{}), inserted: make(chan struct{})}
		c.Vectors = g
	})
	ctx := context.Background()
	var res *Result
	var ierr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(g.inserted)
		res, ierr = k.Insert(ctx, Content{Text: "Neptune has sixteen moons."})
	})
	<-g.upserting
	rows, _, err := k.List(ctx, db.KnowledgeFilter{Limit: 10, Page: 1})
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows %v, err %v", rows, err)
	}
	id := rows[0].ID
	if err := k.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !errors.Is(ierr, ErrContentDeleted) {
		t.Fatalf("insert of deleted content: %+v, %v; want ErrContentDeleted", res, ierr)
	}
	if n, err := g.Count(ctx); err != nil || n != 0 {
		t.Fatalf("%d vectors (err %v) left of deleted content", n, err)
	}
	if _, err := k.Get(ctx, id); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("deleted row: %v", err)
	}
}

// racingStore deletes the other contents (row and chunks, as another
// replica's Delete does) when the first content's chunks are deleted.
type racingStore struct {
	vectordb.Store
	d     *db.DB
	ids   []string
	armed bool
	once  sync.Once
}

func (r *racingStore) DeleteContent(ctx context.Context, contentID string) error {
	var err error
	if !r.armed {
		return r.Store.DeleteContent(ctx, contentID)
	}
	r.once.Do(func() {
		for _, id := range r.ids {
			if id != contentID {
				err = errors.Join(err, r.Store.DeleteContent(ctx, id), r.d.DeleteKnowledgeContent(ctx, id))
			}
		}
	})
	if err != nil {
		return err
	}
	return r.Store.DeleteContent(ctx, contentID)
}

// DeleteAll goes on past a content someone else deleted after it listed
// the rows (another replica's Delete, a second DeleteAll): it stopped with
// ErrNotFound there, and the contents after it stayed.
func TestDeleteAll_ContentDeletedMeanwhileIsNoError(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	var r *racingStore
	k := newKB(t, d, func(c *Config) { r = &racingStore{Store: c.Vectors, d: d}; c.Vectors = r })
	ctx := as("alice")
	for _, text := range []string{"Mars is red.", "Venus is hot.", "Titan is cold."} {
		res, err := k.Insert(ctx, Content{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		r.ids = append(r.ids, res.Content.ID)
	}
	r.armed = true
	if err := k.DeleteAll(ctx); err != nil {
		t.Fatalf("DeleteAll: %v", err)
	}
	if _, total, err := k.List(ctx, db.KnowledgeFilter{Limit: 10, Page: 1}); err != nil || total != 0 {
		t.Fatalf("after DeleteAll: %d rows, %v", total, err)
	}
}

// An insert of a content again (a URL re-imported) that finds it deleted
// by another process while it fetched says ErrContentDeleted, as an insert
// finding it gone at any other step does: it was db.ErrNotFound, as if the
// insert had named a content that does not exist.
func TestDelete_ByAnotherProcessDuringAReinsertIsErrContentDeleted(t *testing.T) {
	t.Parallel()
	fetching, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 2 {
			close(fetching)
			<-release
			w.Write([]byte("Mars has two small moons."))
			return
		}
		w.Write([]byte("Mars has two moons."))
	}))
	defer srv.Close()
	k := newKB(t, testdbs.SQLite(t), func(c *Config) { c.Net.AllowNetworks = []string{"127.0.0.1/32"} })
	ctx := as("alice")
	content := Content{URL: srv.URL + "/mars.txt"}
	first, err := k.Insert(ctx, content)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := k.Insert(ctx, content); done <- err }()
	<-fetching
	other, err := New(k.cfg) // another process on the same database and store
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(ctx, first.Content.ID); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; !errors.Is(err, ErrContentDeleted) {
		t.Fatalf("insert after the delete: %v, want ErrContentDeleted", err)
	}
	if docs, err := k.Search(ctx, "mars moons", nil, 5); err != nil || len(docs) != 0 {
		t.Fatalf("deleted content found: %+v %v", docs, err)
	}
}
