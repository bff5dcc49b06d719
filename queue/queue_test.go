package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// drivers are the databases the durable queue runs on.
var drivers = map[string]testdbs.Opener{"sqlite": testdbs.SQLite, "postgres": testdbs.Postgres}

func eachDriver(t *testing.T, fn func(t *testing.T, d *db.DB)) {
	for name, open := range drivers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

// testCfg is fast: tests wait on outcomes, never on timing.
func testCfg() queue.Config {
	return queue.Config{PollInterval: 50 * time.Millisecond, LockGrace: 2 * time.Second, RetryDelay: 10 * time.Millisecond, MaxAttempts: 3,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
}

func openQueue(t *testing.T, d *db.DB, cfg queue.Config, h queue.Handler) *queue.Queue {
	t.Helper()
	return openQueueWith(t, d, cfg, h, nil)
}

// openQueueWith is openQueue with setup called between Open and Start.
func openQueueWith(t *testing.T, d *db.DB, cfg queue.Config, h queue.Handler, setup func(*queue.Queue)) *queue.Queue {
	t.Helper()
	q, err := queue.Open(context.Background(), d, cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(q)
	}
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		q.Stop(ctx)
	})
	return q
}

// pending returns a session and the PENDING row of a new run in it.
func pending(id, user string) (*db.Session, *db.Run, *queue.Job) {
	sess := &db.Session{SessionID: "s-" + id, SessionType: run.TypeAgent, AgentID: "a1", UserID: user}
	out := &run.Output{RunID: id, SessionID: sess.SessionID, AgentID: "a1", UserID: user, Status: run.StatusPending, CreatedAt: time.Now().Unix()}
	row, err := db.RunFromOutput(out)
	if err != nil {
		panic(err)
	}
	return sess, row, &queue.Job{ID: id, ComponentType: "agent", ComponentID: "a1", SessionID: sess.SessionID, UserID: user}
}

// complete is a handler that stores the run COMPLETED through the fenced
// context, as agents do.
func complete(d *db.DB) queue.Handler {
	return func(ctx context.Context, j *queue.Job) (run.Status, error) {
		return finishRun(ctx, d, j.ID, run.StatusCompleted)
	}
}

// completing is a handler that completes each run it is given (finishRun)
// and counts its calls.
func completing(d *db.DB) (queue.Handler, *atomic.Int64) {
	var calls atomic.Int64
	return func(ctx context.Context, j *queue.Job) (run.Status, error) {
		calls.Add(1)
		return finishRun(ctx, d, j.ID, run.StatusCompleted)
	}, &calls
}

func finishRun(ctx context.Context, d *db.DB, id string, st run.Status) (run.Status, error) {
	ctx = context.WithoutCancel(ctx) // an agent stores a cancelled run too
	row, err := d.GetRun(ctx, id)
	if err != nil {
		return "", err
	}
	out, err := row.Output()
	if err != nil {
		return "", err
	}
	out.Status, out.Content = st, "done"
	next, err := db.RunFromOutput(out)
	if err != nil {
		return "", err
	}
	if _, err := d.UpsertRun(context.WithoutCancel(ctx), next); err != nil {
		return "", err
	}
	return st, nil
}

// waitFor polls cond until it holds or a generous bound passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForDescribed(t, what, cond, nil)
}

// waitForDescribed is waitFor whose failure also prints describe(): the
// state the test waited on. It is per call, not a package variable, because
// each driver's subtest runs in parallel.
func waitForDescribed(t *testing.T, what string, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			state := ""
			if describe != nil {
				state = describe()
			}
			t.Fatalf("timed out waiting for %s (%s)", what, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runStatus(t *testing.T, d *db.DB, id string) run.Status {
	t.Helper()
	r, err := d.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

// waitForEngineJobs waits, describing what, until cond holds of run id's
// River jobs, and returns them.
func waitForEngineJobs(t *testing.T, q *queue.Queue, id, what string, cond func([]queue.EngineJob) bool) []queue.EngineJob {
	t.Helper()
	var engine []queue.EngineJob
	waitForDescribed(t, what, func() bool {
		var err error
		if engine, err = q.EngineJobs(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return cond(engine)
	}, func() string { return fmt.Sprint(engine) })
	return engine
}

func jobOf(t *testing.T, q *queue.Queue, id string) *queue.Job {
	t.Helper()
	j, err := q.Get(context.Background(), id, "", false)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestEnqueue_RunsToCompletion(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		q := openQueue(t, d, testCfg(), complete(d))
		for i := range 5 {
			s, r, j := pending(fmt.Sprintf("r%d", i), "u1")
			if _, dup, err := q.Enqueue(context.Background(), s, r, j); err != nil || dup {
				t.Fatal(err, dup)
			}
		}
		for i := range 5 {
			id := fmt.Sprintf("r%d", i)
			waitFor(t, id+" completed", func() bool { return jobOf(t, q, id).Status == queue.StatusCompleted })
			if st := runStatus(t, d, id); st != run.StatusCompleted {
				t.Fatalf("run %s is %s", id, st)
			}
			if j := jobOf(t, q, id); j.Attempt != 1 || j.LockedBy != "" || j.CompletedAt == 0 {
				t.Fatalf("job %+v", j)
			}
		}
	})
}

func TestEnqueue_RunRowAndJobInOneTransaction(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		q := openQueue(t, d, testCfg(), complete(d))
		s, r, j := pending("tx1", "u1")
		r.SessionID = "other-session" // a run outside its session: refused
		if _, _, err := q.Enqueue(context.Background(), s, r, j); err == nil {
			t.Fatal("enqueue of a bad run succeeded")
		}
		if _, err := q.Get(context.Background(), "tx1", "", false); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("job written without its run: %v", err)
		}
	})
}

func TestEnqueue_IdempotencyKeyPerUserForever(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		q := openQueue(t, d, testCfg(), complete(d))
		ctx := context.Background()
		s, r, j := pending("k1", "u1")
		j.IdempotencyKey = "key-A"
		if id, dup, err := q.Enqueue(ctx, s, r, j); err != nil || dup || id != "k1" {
			t.Fatal(id, dup, err)
		}
		waitFor(t, "k1 completed", func() bool { return jobOf(t, q, "k1").Status == queue.StatusCompleted })
		s, r, j = pending("k2", "u1")
		j.IdempotencyKey = "key-A"
		if id, dup, err := q.Enqueue(ctx, s, r, j); err != nil || !dup || id != "k1" {
			t.Fatalf("repeat: %s %v %v", id, dup, err)
		}
		if _, err := d.GetRun(ctx, "k2"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("the duplicate stored a run: %v", err)
		}
		// Another user's same key is another run.
		s, r, j = pending("k3", "u2")
		j.IdempotencyKey = "key-A"
		if id, dup, err := q.Enqueue(ctx, s, r, j); err != nil || dup || id != "k3" {
			t.Fatal(id, dup, err)
		}
		s, r, j = pending("k4", "u1")
		j.IdempotencyKey = string(make([]byte, queue.MaxIdempotencyKey+1))
		if _, _, err := q.Enqueue(ctx, s, r, j); !errors.Is(err, queue.ErrKeyTooLong) {
			t.Fatal(err)
		}
	})
}

func TestEnqueue_ConcurrentDuplicatesMakeOneRun(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		q := openQueue(t, d, testCfg(), complete(d))
		var wg sync.WaitGroup
		ids := make([]string, 8)
		for i := range ids {
			wg.Go(func() {
				s, r, j := pending(fmt.Sprintf("c%d", i), "u1")
				s.SessionID, r.SessionID, j.SessionID = "s-shared", "s-shared", "s-shared"
				j.IdempotencyKey = "same"
				id, _, err := q.Enqueue(context.Background(), s, r, j)
				if err != nil {
					t.Error(err)
				}
				ids[i] = id
			})
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("duplicates made runs %v", ids)
			}
		}
	})
}

func TestEnqueue_QueueFullPastMaxDepth(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg()
		cfg.MaxQueueDepth = 2
		q, err := queue.Open(context.Background(), d, cfg, complete(d)) // not started: jobs stay queued
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			s, r, j := pending(fmt.Sprintf("f%d", i), "u1")
			_, _, err := q.Enqueue(context.Background(), s, r, j)
			if i < 2 && err != nil || i == 2 && !errors.Is(err, queue.ErrQueueFull) {
				t.Fatalf("enqueue %d: %v", i, err)
			}
		}
		if _, err := d.GetRun(context.Background(), "f2"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("a refused run was stored: %v", err)
		}
	})
}

func TestConcurrency_NeverAboveMax(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg()
		cfg.MaxConcurrency = 3
		var now, peak atomic.Int64
		release := make(chan struct{})
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			n := now.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			<-release
			now.Add(-1)
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		}
		q := openQueue(t, d, cfg, h)
		for i := range 10 {
			s, r, j := pending(fmt.Sprintf("m%d", i), "u1")
			if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "3 running", func() bool { return now.Load() == 3 })
		close(release)
		for i := range 10 {
			id := fmt.Sprintf("m%d", i)
			waitFor(t, id, func() bool { return jobOf(t, q, id).Status == queue.StatusCompleted })
		}
		if peak.Load() > 3 {
			t.Fatalf("peak concurrency %d > 3", peak.Load())
		}
	})
}
