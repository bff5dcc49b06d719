package knowledge

import (
	"context"
	"encoding/json"
	"github.com/agentryhq/agentry/vectordb"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// A content renamed and given new metadata while it is processing (the
// AgentOS page offers the edit as soon as the upload is listed) keeps the
// edit: the insert wrote back the row as it had read it when it began, so
// the name, description and metadata reverted when it completed, and its
// chunks carried the old metadata, so filters on the new values found
// nothing.
func TestUpdate_DuringAnInsertIsKept(t *testing.T) {
	t.Parallel()
	var g *gatedEmbedder
	k := newKB(t, testdbs.SQLite(t), func(c *Config) {
		g = &gatedEmbedder{Embedder: c.Embedder, embedding: make(chan struct{}), release: make(chan struct{})}
		c.Embedder = g
	})
	ctx := as("alice")
	row, err := k.InsertAsync(ctx, Content{Name: "upload.txt", Text: "Saturn's rings are mostly ice.", Metadata: map[string]any{"topic": "draft"}})
	if err != nil {
		t.Fatal(err)
	}
	<-g.embedding
	edit := *row
	edit.Name, edit.Description, edit.Metadata = "Saturn notes", "rings", json.RawMessage(`{"topic":"planets"}`)
	if err := k.Update(ctx, &edit); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	k.Wait()
	got, err := k.Get(ctx, row.ID)
	if err != nil || got.Status != db.KnowledgeCompleted || got.Name != "Saturn notes" || got.Description != "rings" || string(got.Metadata) != `{"topic":"planets"}` {
		t.Fatalf("row after the insert: %+v %v", got, err)
	}
	if docs, err := k.Search(ctx, "saturn rings", map[string]any{"topic": "planets"}, 5); err != nil || len(docs) != 1 || docs[0].Name != "Saturn notes" {
		t.Fatalf("search on the new metadata: %+v %v", docs, err)
	}
	if docs, _ := k.Search(ctx, "saturn rings", map[string]any{"topic": "draft"}, 5); len(docs) != 0 {
		t.Fatalf("chunks kept the old metadata: %+v", docs)
	}
}

// An Update given a row read while the content was processing changes the
// name, description and metadata only: it wrote back the whole row, so a
// content whose insert completed in between said "processing" for good,
// with no size or type.
func TestUpdate_WritesOnlyItsFields(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	ctx := as("alice")
	res, err := k.Insert(ctx, Content{Text: "Titan has lakes of methane."})
	if err != nil {
		t.Fatal(err)
	}
	stale := *res.Content // as read while it was processing
	stale.Status, stale.StatusMessage, stale.Size, stale.Type = db.KnowledgeProcessing, "", 0, ""
	stale.Name = "Titan"
	if err := k.Update(ctx, &stale); err != nil {
		t.Fatal(err)
	}
	got, err := k.Get(ctx, res.Content.ID)
	if err != nil || got.Name != "Titan" || got.Status != db.KnowledgeCompleted || got.Size != res.Content.Size || got.Type != res.Content.Type {
		t.Fatalf("row %+v %v", got, err)
	}
	if stale.Status != db.KnowledgeCompleted {
		t.Fatalf("the caller's copy is not the row written: %+v", stale)
	}
}

// A content inserted again (a URL re-imported, a file uploaded again) that
// is renamed while the new version is fetched keeps the edit: the insert
// marked the row processing by writing back the whole row as it read it
// before the fetch, so the name, description and metadata reverted, and
// the new chunks took the old ones.
func TestUpdate_DuringAReinsertIsKept(t *testing.T) {
	t.Parallel()
	fetching, release := make(chan struct{}), make(chan struct{})
	version := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		version++
		if version == 2 {
			close(fetching)
			<-release
			w.Write([]byte("Saturn's rings are mostly ice and rock."))
			return
		}
		w.Write([]byte("Saturn's rings are mostly ice."))
	}))
	defer srv.Close()
	k := newKB(t, testdbs.SQLite(t), func(c *Config) { c.Net.AllowNetworks = []string{"127.0.0.1/32"} })
	ctx := as("alice")
	content := Content{Name: "saturn", URL: srv.URL + "/saturn.txt", Metadata: map[string]any{"topic": "draft"}}
	first, err := k.Insert(ctx, content)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := k.Insert(ctx, content)
		done <- err
	}()
	<-fetching
	edit := *first.Content
	edit.Name, edit.Description, edit.Metadata = "Saturn notes", "rings", json.RawMessage(`{"topic":"planets"}`)
	if err := k.Update(ctx, &edit); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := k.Get(ctx, first.Content.ID)
	if err != nil || got.Status != db.KnowledgeCompleted || got.Name != "Saturn notes" || got.Description != "rings" || string(got.Metadata) != `{"topic":"planets"}` {
		t.Fatalf("row after the second insert: %+v %v", got, err)
	}
	docs, err := k.Search(ctx, "saturn rings rock", map[string]any{"topic": "planets"}, 5)
	if err != nil || len(docs) != 1 || docs[0].Name != "Saturn notes" || !strings.Contains(docs[0].Content, "rock") {
		t.Fatalf("search on the new metadata: %+v %v", docs, err)
	}
}

// metaGatedStore holds the first UpdateMetadata until release, announcing
// it on updating.
type metaGatedStore struct {
	vectordb.Store
	updating, release chan struct{}
	once              sync.Once
}

func (g *metaGatedStore) UpdateMetadata(ctx context.Context, contentID string, meta map[string]any, keep ...string) error {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.updating)
		<-g.release
	}
	return g.Store.UpdateMetadata(ctx, contentID, meta, keep...)
}

// Two Updates of one content in quick succession (two edits saved one
// after the other) leave its chunks with the metadata its row has: each
// wrote the row, then the chunks, so the first's chunks could land after
// the second's row and chunks, and filters on what the row says found
// nothing.
func TestUpdate_TwoUpdatesLeaveTheChunksAsTheRow(t *testing.T) {
	t.Parallel()
	var g *metaGatedStore
	k := newKB(t, testdbs.SQLite(t), func(c *Config) {
		g = &metaGatedStore{Store: c.Vectors, updating: make(chan struct{}), release: make(chan struct{})}
		c.Vectors = g
	})
	ctx := as("alice")
	res, err := k.Insert(ctx, Content{Name: "titan", Text: "Titan has lakes of methane.", Metadata: map[string]any{"topic": "draft"}})
	if err != nil {
		t.Fatal(err)
	}
	update := func(topic string) chan error {
		done := make(chan error, 1)
		go func() {
			edit := *res.Content
			edit.Metadata = json.RawMessage(`{"topic":"` + topic + `"}`)
			done <- k.Update(ctx, &edit)
		}()
		return done
	}
	first := update("moons")
	<-g.updating // the first Update has written the row and is updating the chunks
	second := update("planets")
	select {
	case err := <-second: // interleaved: the second did not wait for the first
		if err != nil {
			t.Fatal(err)
		}
		second = nil
	case <-time.After(time.Second):
	}
	close(g.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if second != nil {
		if err := <-second; err != nil {
			t.Fatal(err)
		}
	}
	got, err := k.Get(ctx, res.Content.ID)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(got.Metadata, &meta); err != nil {
		t.Fatal(err)
	}
	docs, err := k.Search(ctx, "titan lakes", map[string]any{"topic": meta["topic"]}, 5)
	if err != nil || len(docs) != 1 {
		t.Fatalf("row says topic %v; search on it: %+v %v", meta["topic"], docs, err)
	}
}
