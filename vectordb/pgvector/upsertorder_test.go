package pgvector

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/vectordb"
)

// Upserts of the same rows given in different orders, at the same time,
// both succeed: each took the rows' locks in the order given, and two
// that met in the middle (one holding r1 and waiting for r2, the other
// holding r2 and waiting for r1) ended with one failing "deadlock
// detected", its chunks unwritten. The interleaving is forced: a third
// session holds r3 until both upserts wait for a lock.
func TestUpsert_ConcurrentUpsertsOfOneRowSetInAnyOrderBothSucceed(t *testing.T) {
	raw, schema := testSchema(t)
	s, err := Open(context.Background(), Config{DB: raw, Schema: schema, Dimensions: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	row := func(id string, axis int) vectordb.Row {
		v := make([]float32, 8)
		v[axis] = 1
		return vectordb.Row{ID: id, ContentID: "c", Content: "chunk " + id, Vector: v}
	}
	r1, r2, r3 := row("r1", 0), row("r2", 1), row("r3", 2)
	if err := s.Upsert(context.Background(), []vectordb.Row{r1, r2, r3}); err != nil {
		t.Fatal(err)
	}
	hold, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	if _, err := hold.Exec(`SELECT 1 FROM "` + schema + `".agno_vectors WHERE id = 'r3' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	// waiting reports when n sessions wait for a lock on the table's rows.
	waiting := func(n int) {
		t.Helper()
		for {
			var w int
			if err := raw.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`, schema).Scan(&w); err != nil {
				t.Fatal(err)
			}
			if w >= n {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	errs := make(chan error, 2)
	go func() { errs <- s.Upsert(context.Background(), []vectordb.Row{r1, r3, r2}) }()
	waiting(1)
	go func() { errs <- s.Upsert(context.Background(), []vectordb.Row{r2, r3, r1}) }()
	waiting(2)
	if err := hold.Commit(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("upsert: %v", err)
		}
	}
	if n, err := s.Count(context.Background()); err != nil || n != 3 {
		t.Fatalf("count %d, %v", n, err)
	}
}
