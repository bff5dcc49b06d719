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
	"github.com/agentryhq/agentry/run"
)

// The lease loop's heartbeat and sweep, the repair loop's looks, a streamed
// run's lease (Hold), and Cancel's transaction for a job
// its first try does not cancel, ran on the raw pool without the
// database's query timeout: behind a lock another transaction held (here
// agno_jobs' table lock, as a migration takes) they waited for as long as
// the lock was held, their loops with them. They now end at the query
// timeout with db.ErrUnavailable, and a heartbeat that ended so gives up
// nothing: the run goes on, and the next heartbeat renews its lease.
func TestLease_BlockedLoopsAndCancelEndAtTheQueryTimeout(t *testing.T) {
	t.Parallel()
	d := testdbs.PostgresConfig(t, postgres.Config{QueryTimeout: time.Second})
	started, wrote := make(chan int, 1), make(chan error, 1)
	block := blockUntilCancelled(d, started, wrote)
	h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
		if j.ID == "done" {
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		}
		return block(ctx, j)
	}
	q := openQueue(t, d, testCfg(), h)
	enqueue(t, q, "done")
	waitFor(t, "the first run to complete", func() bool { return jobOf(t, q, "done").Status == queue.StatusCompleted })
	enqueue(t, q, "held")
	<-started
	q.StopHeartbeats() // the test's calls are the only heartbeats
	release, err := q.LockJobsTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), 30*time.Second, errGuard)
	defer cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"heartbeat", func() error { return q.Heartbeat(ctx) }},
		{"sweep", func() error { return q.Sweep(ctx) }},
		// A finished job: Cancel's first try (the queued job's
		// cancel with its run row) does not apply; its transaction does.
		{"Cancel", func() error { _, err := q.Cancel(ctx, "done"); return err }},
		// The repair loop's looks (ended jobs, paused jobs).
		{"repair", func() error { return q.RepairEndedRuns(ctx, nil) }},
		{"paused pass", func() error { return q.EndContinuedJobs(ctx, 10) }},
		// A streamed run's lease, taken in its request.
		{"Hold", func() error {
			_, _, err := q.Hold(ctx, &queue.Job{ID: "streamed", ComponentType: "agent", ComponentID: "a1", SessionID: "s-streamed", UserID: "u1"})
			return err
		}},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, db.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || context.Cause(ctx) != nil {
			t.Errorf("%s behind a held lock: %v (guard: %v), want db.ErrUnavailable at the query timeout", c.name, err, context.Cause(ctx))
		}
	}
	release()
	select {
	case err := <-wrote:
		t.Fatalf("the held run was stopped by a heartbeat that timed out (its write: %v)", err)
	default:
	}
	if err := q.Heartbeat(ctx); err != nil {
		t.Fatalf("heartbeat once the lock is released: %v", err)
	}
	if j := jobOf(t, q, "held"); j.Status != queue.StatusRunning || j.Attempt != 1 || j.LockedBy != q.NodeID() {
		t.Errorf("held job %+v after a timed-out heartbeat, want running at attempt 1 on %s", j, q.NodeID())
	}
	if _, err := q.Cancel(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("the held run's cancelled write: %v", err)
	}
}
