package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// A lease renewal that waits for SQLite's single writer connection stamps
// the lease with the time its write runs, not the time it began to wait: a
// stamp from before the wait makes a live node's lease look older than it
// is, and under load another node's sweep took over a slow-but-alive run
// (TestTakeover_SlowButAliveRunIsNotTakenOver failed that way).
func TestLease_RenewalStampsTheTimeItWrites(t *testing.T) {
	d := testdbs.SQLite(t)
	cfg := testCfg()
	cfg.NodeID = "node-a"
	// A renewal period of 2 s (lock_grace/4): the look below has 1.5 s to
	// see the renewal that waited before the next one could mask it (the
	// next one is due 2 s after the waited one wrote). At 0.5 s the look
	// had 0.4 s, which a loaded race run (load average 20-40) missed.
	cfg.LockGrace = 8 * time.Second
	started, wrote := make(chan int, 4), make(chan error, 4)
	q := openQueue(t, d, cfg, blockUntilCancelled(d, started, wrote))
	s, r, j := pending("held1", "u1")
	if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
		t.Fatal(err)
	}
	<-started
	// Hold the writer (what a long write of River or of another run does
	// under load) past several renewal periods, so that a renewal waits.
	w := d.Driver().(db.SQLWriter).SQLWriter().DB
	conn, err := w.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // more than two renewal periods: one waits
	released := time.Now().Unix()
	conn.Close()
	// The renewal that waited runs now; the next one follows a renewal
	// period (2 s) later. Look before that.
	var got int64
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if got = jobOf(t, q, "held1").LockedAt; got >= released {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the renewal that waited for the writer stamped locked_at %d, %d s before it wrote (at %d or later)", got, released-got, released)
}
