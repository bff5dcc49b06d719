package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// The failed lease of a streamed run whose node died cannot be requeued:
// no engine job dispatches it and it holds no request to run, so queued it
// would wait forever with its run PENDING. The requeue is refused and
// changes nothing.
func TestRequeue_ForegroundLeaseIsRefused(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg()
		cfg.LockGrace = time.Second
		cfg.PollInterval = 100 * time.Millisecond
		cfg.NodeID = "node-a"
		a := openQueue(t, d, cfg, complete(d))
		cfgB := cfg
		cfgB.NodeID = "node-b"
		b := openQueue(t, d, cfgB, complete(d))

		if _, _, err := a.Hold(context.Background(), storeRunning(t, d, "streamed")); err != nil {
			t.Fatal(err)
		}
		a.Hang()
		waitFor(t, "node B fails the hung node's lease", func() bool { return jobOf(t, b, "streamed").Status == queue.StatusFailed })
		waitFor(t, "the run marked ERROR", func() bool { return storedRunStatus(t, d, "streamed") == run.StatusError })

		if j, err := b.Requeue(context.Background(), "streamed"); !errors.Is(err, queue.ErrNotRequeueable) {
			t.Fatalf("requeue of a streamed run's lease: %+v, %v; want ErrNotRequeueable", j, err)
		}
		if j := jobOf(t, b, "streamed"); j.Status != queue.StatusFailed {
			t.Errorf("the refused requeue left the job %s", j.Status)
		}
		if st := storedRunStatus(t, d, "streamed"); st != run.StatusError {
			t.Errorf("the refused requeue left the run %s", st)
		}
	})
}
