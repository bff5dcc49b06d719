package pgvector

import (
	"context"
	"sync"
	"testing"
)

// Stores opened at the same moment on one new table (replicas starting
// together, two knowledge bases on one table) all open: CREATE ... IF NOT
// EXISTS raced, and all but one failed with "duplicate key value violates
// unique constraint pg_type_typname_nsp_index" (or pg_namespace's).
func TestOpen_ConcurrentOpensOfANewTable(t *testing.T) {
	_, schema := testSchema(t)
	errs := make([]error, 6)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(context.Background(), Config{DSN: dsn(), Schema: schema, Dimensions: 8})
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
}
