package knowledge

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/vectordb"
)

// An insert whose caller gives up (a cancelled request, the async
// insert's 30-minute bound) ends FAILED with the reason, as every failed
// insert does; before, recording the failure used the ended context, the
// update failed too, and the row stayed PROCESSING for ever.
func TestInsert_CancelledEndsFailedNotProcessing(t *testing.T) {
	t.Parallel()
	var g *gatedEmbedder
	k := newKB(t, testdbs.SQLite(t), func(c *Config) {
		g = &gatedEmbedder{Embedder: c.Embedder, embedding: make(chan struct{}), release: make(chan struct{})}
		c.Embedder = g
	})
	ctx, cancel := context.WithCancel(as("alice"))
	done := make(chan error, 1)
	var res *Result
	go func() {
		var err error
		res, err = k.Insert(ctx, Content{Text: "Neptune has strong winds."})
		done <- err
	}()
	<-g.embedding
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("insert err %v, want context.Canceled", err)
	}
	row, err := k.Get(as("alice"), res.Content.ID)
	if err != nil {
		t.Fatal(err)
	}
	if row.Status != db.KnowledgeFailed || row.StatusMessage == "" {
		t.Fatalf("cancelled insert left the row %s %q, want FAILED with the reason", row.Status, row.StatusMessage)
	}
}

// cancellingStore cancels the insert's caller once its chunks are written.
type cancellingStore struct {
	vectordb.Store
	cancel context.CancelFunc
}

func (c cancellingStore) Upsert(ctx context.Context, rows []vectordb.Row) error {
	err := c.Store.Upsert(ctx, rows)
	c.cancel()
	return err
}

// A caller that gives up once the chunks are written gets a COMPLETED row
// that says so (before, the row stayed PROCESSING with the chunks found by
// every search).
func TestInsert_CancelledAfterIndexingEndsCompleted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(as("alice"))
	defer cancel()
	k := newKB(t, testdbs.SQLite(t), func(c *Config) { c.Vectors = cancellingStore{c.Vectors, cancel} })
	res, err := k.Insert(ctx, Content{Text: "Uranus rolls on its side."})
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	row, err := k.Get(as("alice"), res.Content.ID)
	if err != nil {
		t.Fatal(err)
	}
	if row.Status != db.KnowledgeCompleted {
		t.Fatalf("row %s %q, want COMPLETED", row.Status, row.StatusMessage)
	}
}

// InsertMany stops when its context ends (a Ctrl-C during `agentry
// knowledge insert docs/`): it went on through every remaining content,
// each failing at once with the context's error and reported as a failed
// document.
func TestInsertMany_StopsWhenCancelled(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	ctx, cancel := context.WithCancel(as("alice"))
	defer cancel()
	contents := make([]Content, 20)
	for i := range contents {
		contents[i] = Content{Text: fmt.Sprintf("Document number %d about moons.", i)}
	}
	reported := 0
	res, err := k.InsertMany(ctx, contents, func(p Progress) {
		if p.Done {
			reported++
			cancel() // after the first document
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if reported != 1 || res[0] == nil || res[0].Content.Status != db.KnowledgeCompleted {
		t.Fatalf("%d documents reported after the cancel of the first; its result %+v", reported, res[0])
	}
	for i, r := range res[1:] {
		if r != nil {
			t.Fatalf("content %d was started after the cancel: %+v", i+1, r)
		}
	}
}
