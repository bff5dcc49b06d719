package queue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/queue"
)

// errGuard ends the test's calls if nothing else does.
var errGuard = errors.New("test guard: the call did not end at the query timeout")

// The read side (GET /queue/jobs, /queue/jobs/{id}, /queue/stats and the
// requeue) ran its statements on the raw pool with the request's context:
// a statement waiting for a lock another transaction holds (here agno_jobs'
// table lock, as a migration takes) waited as long as the client did, where
// every call of the db front ends at the query timeout. Each now ends at
// the database's query timeout with db.ErrUnavailable (503).
func TestInspect_BlockedCallsEndAtTheQueryTimeout(t *testing.T) {
	t.Parallel()
	d := testdbs.PostgresConfig(t, postgres.Config{QueryTimeout: time.Second})
	q, err := queue.Open(context.Background(), d, testCfg(), complete(d))
	if err != nil {
		t.Fatal(err)
	}
	enqueue(t, q, "locked")
	release, err := q.LockJobsTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeoutCause(context.Background(), 30*time.Second, errGuard)
	defer cancel()
	calls := map[string]func() error{
		"Get":  func() error { _, err := q.Get(ctx, "locked", "", false); return err },
		"List": func() error { _, _, err := q.List(ctx, queue.Filter{Limit: 20, Page: 1}); return err },
		"Stats": func() error {
			_, err := q.Stats(ctx, "", false)
			return err
		},
		"Requeue": func() error { _, err := q.Requeue(ctx, "locked"); return err },
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := map[string]error{}
	for name, call := range calls {
		wg.Go(func() {
			err := call()
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	for name, err := range errs {
		if !errors.Is(err, db.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || context.Cause(ctx) != nil {
			t.Errorf("%s behind a held lock: %v (guard: %v), want db.ErrUnavailable at the query timeout", name, err, context.Cause(ctx))
		}
	}
}
