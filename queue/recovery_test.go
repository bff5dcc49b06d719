package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// blockUntilCancelled is a handler that runs until its context ends, then
// stores the run CANCELLED as an agent does; it reports the write's error.
func blockUntilCancelled(d *db.DB, started chan<- int, wrote chan<- error) queue.Handler {
	return func(ctx context.Context, j *queue.Job) (run.Status, error) {
		started <- j.Attempt
		<-ctx.Done()
		_, err := finishRun(ctx, d, j.ID, run.StatusCancelled)
		wrote <- err
		if err != nil {
			return "", err
		}
		return run.StatusCancelled, nil
	}
}

// takeOverOnNodeB starts node B (cfg with another node id), whose handler
// completes any run it gets, and waits until it has completed job id, which
// a hung node holds (q, node A, sees the job row too). It returns the
// attempt node B ran.
func takeOverOnNodeB(t *testing.T, d *db.DB, cfg queue.Config, q *queue.Queue, id string) *atomic.Int64 {
	t.Helper()
	cfg.NodeID = "node-b"
	attempt := new(atomic.Int64)
	openQueue(t, d, cfg, func(ctx context.Context, j *queue.Job) (run.Status, error) {
		attempt.Store(int64(j.Attempt))
		return finishRun(ctx, d, j.ID, run.StatusCompleted)
	})
	waitForDescribed(t, "takeover by node B", func() bool { return jobOf(t, q, id).Status == queue.StatusCompleted },
		func() string { return fmt.Sprintf("%+v", jobOf(t, q, id)) })
	return attempt
}

// wantFenced waits for what a stale attempt reports on ch (its write's
// error, its run's end) and fails unless the fence refused it.
func wantFenced(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		if !errors.Is(err, run.ErrFenced) {
			t.Fatalf("%s: %v, want run.ErrFenced", what, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: never came", what)
	}
}

func TestTakeover_DeadNodeAfterLockGraceAndFencing(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg()
		cfg.LockGrace = time.Second
		cfg.NodeID = "node-a"
		started, wrote := make(chan int, 4), make(chan error, 4)
		a := openQueue(t, d, cfg, blockUntilCancelled(d, started, wrote))
		s, r, j := pending("t1", "u1")
		if _, _, err := a.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		if at := <-started; at != 1 {
			t.Fatalf("first attempt %d", at)
		}
		a.Hang() // node A hangs: its lease expires

		attemptB := takeOverOnNodeB(t, d, cfg, a, "t1")
		// Node A's River client is alive and may fetch the requeued job again
		// before B does (A then loses that attempt too): B's attempt is >= 2.
		if attemptB.Load() < 2 {
			t.Fatalf("node B ran attempt %d, want >= 2", attemptB.Load())
		}
		// Node A comes back: its next heartbeat finds it superseded and stops
		// its run, whose write is refused by the fence.
		a.Wake()
		wantFenced(t, wrote, "node A's stale attempt's write")
		if st := runStatus(t, d, "t1"); st != run.StatusCompleted {
			t.Fatalf("run is %s after the stale attempt, want COMPLETED", st)
		}
		if j := jobOf(t, a, "t1"); j.Status != queue.StatusCompleted || j.Attempt != int(attemptB.Load()) {
			t.Fatalf("job %+v", j)
		}
	})
}

// TestTakeover_RunMoveDoesNotOverwriteTheNextAttempt: a takeover makes the
// job available and then moves its run back to PENDING; a worker may claim
// the job and finish its run between the move's read and its write. The
// move is fenced on the job: the finished run stays COMPLETED (it was left
// PENDING with its job COMPLETED, found by CI under load).
func TestTakeover_RunMoveDoesNotOverwriteTheNextAttempt(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		var once sync.Once
		held, outcome := make(chan string, 1), make(chan error, 1)
		var current atomic.Pointer[queue.Queue]
		// hold holds the first PENDING move of run move1 between its read
		// and its write until the next attempt has finished the run. Both
		// nodes get it: the hung node's sweeper may take its own lease over.
		hold := func(id string, st run.Status) func(error) {
			if id != "move1" || st != run.StatusPending {
				return nil
			}
			var done func(error)
			once.Do(func() {
				done = func(err error) { outcome <- err }
				deadline := time.Now().Add(60 * time.Second)
				for time.Now().Before(deadline) {
					if q := current.Load(); q != nil {
						if j, err := q.Get(context.Background(), "move1", "", false); err == nil && j.Status == queue.StatusCompleted {
							held <- ""
							return
						}
					}
					time.Sleep(20 * time.Millisecond)
				}
				held <- "the next attempt never finished while the move was held"
			})
			return done
		}
		open := func(cfg queue.Config, h queue.Handler) *queue.Queue {
			return openQueueWith(t, d, cfg, h, func(q *queue.Queue) { q.OnRunStatusRead(hold) })
		}

		cfg := testCfg()
		cfg.LockGrace = time.Second
		cfg.NodeID = "node-a"
		started, wrote := make(chan int, 4), make(chan error, 4)
		a := open(cfg, blockUntilCancelled(d, started, wrote))
		current.Store(a)
		s, r, j := pending("move1", "u1")
		if _, _, err := a.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		<-started
		a.Hang()
		t.Cleanup(a.Wake) // before its Stop: a failed test must not hang there
		cfgB := cfg
		cfgB.NodeID = "node-b"
		open(cfgB, complete(d))

		select {
		case msg := <-held:
			if msg != "" {
				t.Fatal(msg)
			}
		case <-time.After(90 * time.Second):
			t.Fatal("the run was never taken over")
		}
		if err := <-outcome; !errors.Is(err, run.ErrFenced) {
			t.Fatalf("the held move's write: %v, want run.ErrFenced", err)
		}
		if st := runStatus(t, d, "move1"); st != run.StatusCompleted {
			t.Fatalf("run is %s after the takeover's held move, want COMPLETED", st)
		}
		a.Wake() // its stale attempt stops (fenced), so the node can stop
		select {
		case <-wrote:
		case <-time.After(60 * time.Second):
			t.Fatal("node A's stale attempt never stopped")
		}
	})
}

func TestTakeover_SlowButAliveRunIsNotTakenOver(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg()
		// lock_grace 2 s, not 1 s: locked_at counts whole seconds, so with 1 s
		// a lease renewed at x.99 is taken at x+2.0, and a renewal late by
		// 0.8 s (a -race test process at load 30 is) lost it; the test
		// is about a node that renews, not about sub-second scheduling.
		cfg.LockGrace = 2 * time.Second
		cfg.NodeID = "node-a"
		started, wrote := make(chan int, 4), make(chan error, 4)
		a := openQueue(t, d, cfg, blockUntilCancelled(d, started, wrote))
		s, r, j := pending("slow1", "u1")
		if _, _, err := a.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		<-started
		cfgB := cfg
		cfgB.NodeID = "node-b"
		var ranB atomic.Bool
		openQueue(t, d, cfgB, func(ctx context.Context, j *queue.Job) (run.Status, error) {
			ranB.Store(true)
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		})
		// Three lock graces of sweeps by node B while A heartbeats.
		time.Sleep(3 * cfg.LockGrace)
		if ranB.Load() {
			t.Fatal("node B took over a run whose node is alive")
		}
		if j := jobOf(t, a, "slow1"); j.Attempt != 1 || j.LockedBy != "node-a" || j.Status != queue.StatusRunning {
			t.Fatalf("job %+v", j)
		}
	})
}

func TestRecovery_SingleNodeResumesAtStart(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg()
		cfg.LockGrace = time.Hour // nothing but the start-up recovery may resume it
		cfg.PollInterval = 100 * time.Millisecond
		cfg.NodeID = "crashed"
		started, wrote := make(chan int, 4), make(chan error, 4)
		a := openQueue(t, d, cfg, blockUntilCancelled(d, started, wrote))
		s, r, j := pending("crash1", "u1")
		if _, _, err := a.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		<-started
		a.Hang()
		// A streamed run cut by the same crash: RUNNING, no job.
		orphan := &run.Output{RunID: "stream1", SessionID: "s-crash1", AgentID: "a1", UserID: "u1", Status: run.StatusRunning, CreatedAt: time.Now().Unix()}
		row, _ := db.RunFromOutput(orphan)
		if _, err := d.UpsertRun(context.Background(), row); err != nil {
			t.Fatal(err)
		}

		cfgB := cfg
		cfgB.NodeID = "restarted"
		cfgB.SingleNode = true
		b := openQueue(t, d, cfgB, complete(d))
		waitFor(t, "resumed at start", func() bool { return jobOf(t, b, "crash1").Status == queue.StatusCompleted })
		if j := jobOf(t, b, "crash1"); j.Attempt != 2 {
			t.Fatalf("job %+v", j)
		}
		if st := runStatus(t, d, "stream1"); st != run.StatusError {
			t.Fatalf("orphaned streamed run is %s, want ERROR", st)
		}
		a.Wake()
		if err := <-wrote; !errors.Is(err, run.ErrFenced) {
			t.Fatalf("crashed node's late write: %v", err)
		}
	})
}

func TestCancel_QueuedJobAtOnce(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		var ran atomic.Bool
		q, err := queue.Open(context.Background(), d, testCfg(), func(ctx context.Context, j *queue.Job) (run.Status, error) {
			ran.Store(true)
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		})
		if err != nil {
			t.Fatal(err)
		}
		s, r, j := pending("cq1", "u1")
		if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		res, err := q.Cancel(context.Background(), "cq1")
		if err != nil || res.Status != queue.StatusCancelled {
			t.Fatal(res, err)
		}
		if st := runStatus(t, d, "cq1"); st != run.StatusCancelled {
			t.Fatalf("run %s", st)
		}
		if err := q.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer q.Stop(context.Background())
		// A second job proves the worker polls; the cancelled one never runs.
		s, r, j = pending("cq2", "u1")
		if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "cq2", func() bool { return jobOf(t, q, "cq2").Status == queue.StatusCompleted })
		ran.Store(false)
		if j := jobOf(t, q, "cq1"); j.Status != queue.StatusCancelled || j.Attempt != 0 {
			t.Fatalf("cancelled job %+v", j)
		}
	})
}

func TestCancel_RunningOnAnotherNode(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg()
		cfg.NodeID = "runner"
		started, wrote := make(chan int, 4), make(chan error, 4)
		a := openQueue(t, d, cfg, blockUntilCancelled(d, started, wrote))
		s, r, j := pending("cr1", "u1")
		if _, _, err := a.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		<-started
		cfgB := cfg
		cfgB.NodeID = "canceller"
		b, err := queue.Open(context.Background(), d, cfgB, complete(d)) // never started: only cancels
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.Cancel(context.Background(), "cr1")
		if err != nil || res.Status != queue.StatusRunning {
			t.Fatal(res, err)
		}
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
		waitFor(t, "job cancelled", func() bool { return jobOf(t, b, "cr1").Status == queue.StatusCancelled })
		if st := runStatus(t, d, "cr1"); st != run.StatusCancelled {
			t.Fatalf("run %s", st)
		}
	})
}

func TestPoison_ErrorAfterMaxAttemptsOthersUnaffected(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		var poisonRuns atomic.Int64
		q := openQueue(t, d, testCfg(), func(ctx context.Context, j *queue.Job) (run.Status, error) {
			switch j.ID {
			case "poison":
				poisonRuns.Add(1)
				panic("the worker crashes on this run")
			case "gone":
				return "", queue.Permanent(errors.New("agent a9 no longer exists"))
			}
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		})
		for _, id := range []string{"poison", "gone", "fine"} {
			s, r, j := pending(id, "u1")
			if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "poison failed", func() bool { return jobOf(t, q, "poison").Status == queue.StatusFailed })
		waitFor(t, "gone failed", func() bool { return jobOf(t, q, "gone").Status == queue.StatusFailed })
		waitFor(t, "fine completed", func() bool { return jobOf(t, q, "fine").Status == queue.StatusCompleted })
		if p := jobOf(t, q, "poison"); p.Attempt != 3 || !strings.Contains(p.Error, "panicked") || poisonRuns.Load() != 3 {
			t.Fatalf("poison job %+v after %d runs", p, poisonRuns.Load())
		}
		if g := jobOf(t, q, "gone"); g.Attempt != 1 || !strings.Contains(g.Error, "no longer exists") {
			t.Fatalf("gone job %+v", g)
		}
		// The run row follows its job's outcome.
		for _, id := range []string{"poison", "gone"} {
			waitFor(t, "run "+id+" ERROR", func() bool { return runStatus(t, d, id) == run.StatusError })
		}
		jobs, total, err := q.List(context.Background(), queue.Filter{Status: queue.StatusFailed, Limit: 10, Page: 1})
		if err != nil || total != 2 || len(jobs) != 2 {
			t.Fatal(jobs, total, err)
		}
		st, err := q.Stats(context.Background(), "", false)
		if err != nil || st.Failed != 2 || st.Completed != 1 {
			t.Fatal(st, err)
		}
		// Requeue (admin): the permanent failure runs again.
		if _, err := q.Requeue(context.Background(), "fine"); !errors.Is(err, queue.ErrNotRequeueable) {
			t.Fatal(err)
		}
		if _, err := q.Requeue(context.Background(), "gone"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "gone failed again", func() bool {
			j := jobOf(t, q, "gone")
			return j.Status == queue.StatusFailed && j.Attempt == 2
		})
	})
}

// A single node's start-up marks ERROR every run left PENDING or RUNNING
// without a job, however many (a database carried over from 2.x can hold
// thousands its crashed processes left RUNNING): they are read a page at a
// time, and the pages after the first are not skipped.
func TestRecovery_EveryOrphanedRunAcrossPages(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	const n = 1201 // three pages of live run ids
	now := time.Now().Unix()
	if _, err := d.UpsertSession(context.Background(), &db.Session{SessionID: "s-old", SessionType: run.TypeAgent, AgentID: "a1"}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		st := run.StatusRunning
		if i%3 == 0 {
			st = run.StatusPending
		}
		row, _ := db.RunFromOutput(&run.Output{RunID: fmt.Sprintf("stale-%04d", i), SessionID: "s-old", AgentID: "a1", Status: st, CreatedAt: now})
		if _, err := d.UpsertRun(context.Background(), row); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testCfg()
	cfg.SingleNode = true
	openQueue(t, d, cfg, complete(d))
	waitFor(t, "every orphaned run ended", func() bool {
		sts, err := d.RunStatuses(context.Background(), []string{"stale-0000", "stale-0600", fmt.Sprintf("stale-%04d", n-1)})
		return err == nil && sts["stale-0000"] == run.StatusError && sts["stale-0600"] == run.StatusError && sts[fmt.Sprintf("stale-%04d", n-1)] == run.StatusError
	})
	left, err := d.RunIDsInStatus(context.Background(), []run.Status{run.StatusRunning, run.StatusPending}, "", 10)
	if err != nil || len(left) != 0 {
		t.Fatalf("runs still live: %v (%v)", left, err)
	}
}
