package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/queue"
)

// A single node's Start whose recovery failed (here: the jobs table locked
// past the query timeout, as a migration holds it) returned the error but
// stayed started: every later Start said "already started", and the queue
// could not be started again without a new process. It can be retried,
// and the retry runs what was queued.
func TestStart_FailedRecoveryCanBeRetried(t *testing.T) {
	t.Parallel()
	d := testdbs.PostgresConfig(t, postgres.Config{QueryTimeout: time.Second})
	cfg := testCfg()
	cfg.SingleNode = true
	h, calls := completing(d)
	q, err := queue.Open(context.Background(), d, cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Stop(context.Background()) })
	enqueue(t, q, "after-retry")
	release, err := q.LockJobsTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	err = q.Start(context.Background())
	release()
	if !errors.Is(err, db.ErrUnavailable) {
		t.Fatalf("Start with the jobs table locked = %v; want db.ErrUnavailable", err)
	}
	if err := q.Start(context.Background()); err != nil {
		t.Fatalf("Start again once the lock is gone = %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for calls.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the queued run did not run after the retried Start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
