package knowledge

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/embedder/local"
	"github.com/agentryhq/agentry/vectordb"
	"github.com/agentryhq/agentry/vectordb/embedded"
	"github.com/agentryhq/agentry/vectordb/pgvector"
)

// replicaStore is one replica's pgvector store. A writer's chunk write
// (Upsert, or ReplaceContent) waits until the other replica's store has
// written (DeleteContent or ReplaceContent returned) or a while has
// passed; done is closed once the store deleted (or began replacing).
type replicaStore struct {
	vectordb.Store
	writer      bool
	other, done chan struct{}
	once        sync.Once
}

func (r *replicaStore) signal() { r.once.Do(func() { close(r.done) }) }

func (r *replicaStore) wait() {
	if r.writer {
		select {
		case <-r.other:
		case <-time.After(2 * time.Second):
		}
	}
}

func (r *replicaStore) DeleteContent(ctx context.Context, id string) error {
	err := r.Store.DeleteContent(ctx, id)
	r.signal()
	return err
}

func (r *replicaStore) Upsert(ctx context.Context, rows []vectordb.Row) error {
	r.wait()
	return r.Store.Upsert(ctx, rows)
}

// ReplaceContent forwards to the store's, when it has one.
func (r *replicaStore) ReplaceContent(ctx context.Context, id string, rows []vectordb.Row) error {
	rep, ok := r.Store.(interface {
		ReplaceContent(context.Context, string, []vectordb.Row) error
	})
	if !ok {
		if err := r.DeleteContent(ctx, id); err != nil {
			return err
		}
		return r.Upsert(ctx, rows)
	}
	if r.writer { // the other replica starts now, and writes first
		r.signal()
	}
	r.wait()
	err := rep.ReplaceContent(ctx, id, rows)
	r.signal()
	return err
}

// Two replicas (two knowledge bases on one Postgres and one pgvector
// table; on one embedded store's file, as agentry knowledge insert beside
// agentry serve) indexing an upload of one file at once leave one
// version's chunks. Each replica's lock is its own: the second deleted
// the content's chunks between the first's delete and upsert, and both
// versions' chunks stayed for every search to find.
func TestInsert_TwoReplicasInsertingOneContentLeaveOneSetOfChunks(t *testing.T) {
	t.Parallel()
	t.Run("pgvector", func(t *testing.T) {
		t.Parallel()
		d := testdbs.Postgres(t)
		dsn := os.Getenv("AGENTRY_TEST_POSTGRES_DSN")
		if dsn == "" {
			dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
		}
		b := make([]byte, 6)
		rand.Read(b)
		schema := "agentry_test_" + hex.EncodeToString(b)
		t.Cleanup(func() {
			raw, err := sql.Open("pgx", dsn)
			if err == nil {
				raw.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`)
				raw.Close()
			}
		})
		twoReplicas(t, d, func() (vectordb.Store, error) {
			return pgvector.Open(context.Background(), pgvector.Config{DSN: dsn, Schema: schema, Table: "kb_vectors", Dimensions: 64})
		})
	})
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "v.db")
		twoReplicas(t, testdbs.SQLite(t), func() (vectordb.Store, error) {
			return embedded.Open(context.Background(), embedded.Config{Path: path, Dimensions: 64, EmbedderID: local.New(local.Config{Dimensions: 64}).ID()})
		})
	})
}

func twoReplicas(t *testing.T, d *db.DB, open func() (vectordb.Store, error)) {
	e := local.New(local.Config{Dimensions: 64})
	ctx := context.Background()
	aDone, bDone := make(chan struct{}), make(chan struct{})
	replica := func(s *replicaStore) *Knowledge {
		vs, err := open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { vs.Close() })
		s.Store = vs
		k, err := New(Config{Name: "kb", DB: d, Vectors: s, Embedder: e})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a := replica(&replicaStore{writer: true, other: bDone, done: aDone})
	bs := &replicaStore{done: bDone}
	bk := replica(bs)
	upload := func(text string) Content {
		return Content{Name: "notes", Filename: "notes.txt", Data: []byte(text)}
	}
	var wg sync.WaitGroup
	var ra, rb *Result
	var errA, errB error
	wg.Go(func() { ra, errA = a.Insert(ctx, upload("Mars has two moons.")) })
	<-aDone // the first replica deleted the old chunks and is to upsert
	wg.Go(func() { rb, errB = bk.Insert(ctx, upload("Jupiter has ninety-five moons.")) })
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("inserts: %v, %v", errA, errB)
	}
	if ra.Content.ID != rb.Content.ID {
		t.Fatalf("not one content: %s and %s", ra.Content.ID, rb.Content.ID)
	}
	hits, err := a.Search(ctx, "moons", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, h := range hits {
		seen[h.Content] = true
	}
	if len(seen) != 1 {
		t.Fatalf("search finds %d versions of one content: %v", len(seen), seen)
	}
	n, err := bs.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d chunks stored, want one version's 1", n)
	}
}
