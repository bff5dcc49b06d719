package queue_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/internal/faultproxy"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// proxiedPostgres opens a fresh schema on the test server through a proxy
// that counts round trips.
func proxiedPostgres(t *testing.T) (*db.DB, *faultproxy.Proxy) {
	t.Helper()
	return proxiedPostgresPool(t, 2)
}

// proxiedPostgresPool is proxiedPostgres with a pool of conns connections.
func proxiedPostgresPool(t testing.TB, conns int) (*db.DB, *faultproxy.Proxy) {
	t.Helper()
	dsn := os.Getenv("AGENTRY_TEST_POSTGRES_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	u.Host = p.Addr()
	b := make([]byte, 6)
	rand.Read(b)
	schema := "agentry_test_" + hex.EncodeToString(b)
	d, err := postgres.Open(context.Background(), postgres.Config{DSN: u.String(), Schema: schema, MaxOpenConns: conns})
	if err != nil {
		t.Fatalf("postgres test server unavailable: %v", err)
	}
	t.Cleanup(func() {
		w := d.Driver().(db.SQLWriter).SQLWriter().DB
		if _, err := w.ExecContext(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		d.Close()
	})
	return d, p
}

// openOneConn opens a queue (not started: no polling) on d, then leaves d's
// pool one connection (the queue's migrations need two): statements are
// prepared once, and grouped can hold the pool.
func openOneConn(t *testing.T, d *db.DB, cfg queue.Config) *queue.Queue {
	t.Helper()
	q, err := queue.Open(context.Background(), d, cfg, complete(d))
	if err != nil {
		t.Fatal(err)
	}
	d.Driver().(db.SQLWriter).SQLWriter().DB.SetMaxOpenConns(1)
	return q
}

// grouped enqueues the runs of ids at once as one group: the pool's only
// connection is held until every enqueue but the first (which leads a
// group of its own and waits for the connection) waits for the next group.
// prep, when set, adjusts enqueue i and returns its context (nil: none).
func grouped(t *testing.T, d *db.DB, q *queue.Queue, ids []string, prep func(i int, s *db.Session, r *db.Run, j *queue.Job) context.Context) (runIDs []string, dups []bool, errs []error) {
	t.Helper()
	w := d.Driver().(db.SQLWriter).SQLWriter().DB
	hold, err := w.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	runIDs, dups, errs = make([]string, len(ids)), make([]bool, len(ids)), make([]error, len(ids))
	var wg sync.WaitGroup
	start := func(i int) {
		wg.Go(func() {
			s, r, j := pending(ids[i], "u1")
			ctx := context.Background()
			if prep != nil {
				if c := prep(i, s, r, j); c != nil {
					ctx = c
				}
			}
			runIDs[i], dups[i], errs[i] = q.Enqueue(ctx, s, r, j)
		})
	}
	// The first leads a group of its own: wait until it took its group
	// (it then waits for the connection).
	start(0)
	deadline := time.Now().Add(30 * time.Second)
	waitGroup := func(pending int) {
		for {
			leading, n := q.EnqueueGroup()
			if leading && n == pending {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("enqueue group: leading %v, %d pending; want %d", leading, n, pending)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitGroup(0)
	for i := 1; i < len(ids); i++ {
		start(i)
	}
	waitGroup(len(ids) - 1)
	hold.Close()
	wg.Wait()
	return runIDs, dups, errs
}

// An enqueue on Postgres is one transaction in two round trips (BEGIN and
// its statements in one pgx batch, then COMMIT), and the enqueues of
// concurrent callers share one: a group of 8 in two round trips. It took 8
// round trips per enqueue when every statement was its own.
func TestEnqueue_PostgresRoundTrips(t *testing.T) {
	d, p := proxiedPostgres(t)
	q := openOneConn(t, d, testCfg())
	ctx := context.Background()
	// Warm up: the connection prepares each statement once.
	for i, key := range []string{"", "warm-key"} {
		s, r, j := pending(fmt.Sprintf("warm%d", i), "u1")
		j.IdempotencyKey = key
		if _, _, err := q.Enqueue(ctx, s, r, j); err != nil {
			t.Fatal(err)
		}
	}
	const n = 10
	before := p.Exchanges()
	for i := range n {
		s, r, j := pending(fmt.Sprintf("one%d", i), "u1")
		if i%2 == 0 {
			j.IdempotencyKey = fmt.Sprintf("key-one%d", i)
		}
		if _, dup, err := q.Enqueue(ctx, s, r, j); err != nil || dup {
			t.Fatal(err, dup)
		}
	}
	// 2 per enqueue; a check of an idle connection (pgx pings one idle
	// for a second) may add one.
	got := p.Exchanges() - before
	t.Logf("%d enqueues one by one: %d round trips", n, got)
	if got > 2*n+2 {
		t.Fatalf("%d enqueues took %d round trips, want at most %d", n, got, 2*n+2)
	}

	ids := make([]string, 9)
	for i := range ids {
		ids[i] = fmt.Sprintf("g%d", i)
	}
	before = p.Exchanges()
	runIDs, dups, errs := grouped(t, d, q, ids, func(i int, _ *db.Session, _ *db.Run, j *queue.Job) context.Context {
		j.IdempotencyKey = fmt.Sprintf("key-g%d", i)
		return nil
	})
	got = p.Exchanges() - before
	t.Logf("a group of 8 after one alone: %d round trips", got)
	for i := range ids {
		if errs[i] != nil || dups[i] || runIDs[i] != ids[i] {
			t.Fatalf("enqueue %d: %s %v %v", i, runIDs[i], dups[i], errs[i])
		}
	}
	// The first alone (2), the other 8 as one group (2), and a ping.
	if got > 5 {
		t.Fatalf("9 enqueues (a group of 8) took %d round trips, want at most 5", got)
	}
	for _, id := range ids {
		if _, err := d.GetRun(ctx, id); err != nil {
			t.Fatalf("run %s: %v", id, err)
		}
		if j := jobOf(t, q, id); j.Status != queue.StatusQueued || j.IdempotencyKey != "key-"+id {
			t.Fatalf("job %+v", j)
		}
	}
}

// Two enqueues with one key in one group make one run: the later one is
// made after the group, and answers the first's run as a repeat. A used key
// in a group sends only its enqueue out of the group.
func TestEnqueue_PostgresGroupSameKey(t *testing.T) {
	d, _ := proxiedPostgres(t)
	q := openOneConn(t, d, testCfg())
	ctx := context.Background()
	s, r, j := pending("old", "u1")
	j.IdempotencyKey = "used"
	if _, _, err := q.Enqueue(ctx, s, r, j); err != nil {
		t.Fatal(err)
	}
	ids := []string{"lead", "a", "b", "c", "d", "e"}
	keys := map[string]string{"a": "same", "c": "same", "d": "used", "e": "other"}
	runIDs, dups, errs := grouped(t, d, q, ids, func(i int, _ *db.Session, _ *db.Run, j *queue.Job) context.Context {
		j.IdempotencyKey = keys[ids[i]]
		return nil
	})
	got := map[string]int{}
	for i, id := range ids {
		if errs[i] != nil {
			t.Fatalf("enqueue %s: %v", id, errs[i])
		}
		got[id] = i
	}
	res := func(id string) (string, bool) { return runIDs[got[id]], dups[got[id]] }
	for _, id := range []string{"lead", "b", "e"} {
		if run, dup := res(id); run != id || dup {
			t.Fatalf("enqueue %s: run %s dup %v", id, run, dup)
		}
	}
	if run, dup := res("d"); run != "old" || !dup {
		t.Fatalf("enqueue d (a used key): run %s dup %v, want old, a repeat", run, dup)
	}
	// a and c share a key: whichever joined the group first is the run.
	first, second := "a", "c"
	if run, _ := res("a"); run == "c" {
		first, second = "c", "a"
	}
	if run, dup := res(first); run != first || dup {
		t.Fatalf("enqueue %s: run %s dup %v", first, run, dup)
	}
	if run, dup := res(second); run != first || !dup {
		t.Fatalf("enqueue %s (the same key as %s): run %s dup %v, want %s, a repeat", second, first, run, dup, first)
	}
	for _, id := range []string{second, "d"} {
		if _, err := d.GetRun(ctx, id); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("the repeat %s stored a run: %v", id, err)
		}
		if _, err := q.Get(ctx, id, "", false); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("the repeat %s stored a job: %v", id, err)
		}
	}
	for _, id := range []string{"lead", first, "b", "e"} {
		if _, err := d.GetRun(ctx, id); err != nil {
			t.Fatalf("run %s: %v", id, err)
		}
	}
}

// A write refused in a group (a session of another user) fails alone: the
// group commits without it, and it gets the error it gets alone.
func TestEnqueue_PostgresGroupRefusedWriteFailsAlone(t *testing.T) {
	d, _ := proxiedPostgres(t)
	q := openOneConn(t, d, testCfg())
	ctx := context.Background()
	s, r, j := pending("theirs", "u2")
	if _, _, err := q.Enqueue(ctx, s, r, j); err != nil {
		t.Fatal(err)
	}
	ids := []string{"lead", "a", "b", "c"}
	_, _, errs := grouped(t, d, q, ids, func(i int, s *db.Session, r *db.Run, j *queue.Job) context.Context {
		if ids[i] == "b" {
			s.SessionID, r.SessionID, j.SessionID = "s-theirs", "s-theirs", "s-theirs"
		}
		return db.WithUserScope(context.Background(), "u1")
	})
	for i, id := range ids {
		_, gerr := d.GetRun(ctx, id)
		_, jerr := q.Get(ctx, id, "", false)
		if id == "b" {
			if !errors.Is(errs[i], db.ErrNotFound) {
				t.Fatalf("enqueue into another user's session: %v, want ErrNotFound", errs[i])
			}
			if !errors.Is(gerr, db.ErrNotFound) || !errors.Is(jerr, queue.ErrNotFound) {
				t.Fatalf("the refused enqueue stored its run (%v) or job (%v)", gerr, jerr)
			}
			continue
		}
		if errs[i] != nil || gerr != nil || jerr != nil {
			t.Fatalf("enqueue %s: %v; run %v; job %v", id, errs[i], gerr, jerr)
		}
	}
}

// A group that would pass max_queue_depth is made enqueue by enqueue: the
// ones that fit are queued, the others refused with ErrQueueFull, nothing of
// theirs stored.
func TestEnqueue_PostgresGroupPastMaxDepth(t *testing.T) {
	d, _ := proxiedPostgres(t)
	cfg := testCfg()
	cfg.MaxQueueDepth = 5
	q := openOneConn(t, d, cfg)
	ctx := context.Background()
	for i := range 2 {
		s, r, j := pending(fmt.Sprintf("pre%d", i), "u1")
		if _, _, err := q.Enqueue(ctx, s, r, j); err != nil {
			t.Fatal(err)
		}
	}
	// The first of these is alone (3 queued), the other 4 one group that
	// would make 7: two of them fit.
	ids := []string{"x0", "x1", "x2", "x3", "x4"}
	_, _, errs := grouped(t, d, q, ids, nil)
	queued, full := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			queued++
			if _, err := d.GetRun(ctx, ids[i]); err != nil {
				t.Fatalf("run %s: %v", ids[i], err)
			}
		case errors.Is(err, queue.ErrQueueFull):
			full++
			if _, err := d.GetRun(ctx, ids[i]); !errors.Is(err, db.ErrNotFound) {
				t.Fatalf("a refused run %s was stored: %v", ids[i], err)
			}
		default:
			t.Fatalf("enqueue %s: %v", ids[i], err)
		}
	}
	if queued != 3 || full != 2 {
		t.Fatalf("%d queued, %d refused; want 3 and 2", queued, full)
	}
	if errs[0] != nil {
		t.Fatalf("the first (alone, 3rd queued) was refused: %v", errs[0])
	}
}

// BenchmarkThroughput_PostgresRoundTrips is BenchmarkThroughput_Postgres
// through a proxy that counts round trips (the proxy's own CPU counts as
// the process's: compare CPU with BenchmarkThroughput_Postgres): grouped,
// and with every enqueue alone (its own transaction, statement by
// statement, as before the group commit).
func BenchmarkThroughput_PostgresRoundTrips(b *testing.B) {
	for _, mode := range []string{"grouped", "alone"} {
		b.Run(mode, func(b *testing.B) {
			d, p := proxiedPostgresPool(b, 8)
			var setup func(*queue.Queue)
			if mode == "alone" {
				setup = func(q *queue.Queue) { q.NoEnqueueGroup() }
			}
			benchThroughput(b, d, nil, nil, nil, p.Exchanges, setup)
		})
	}
}

// BenchmarkEnqueue_Postgres is the enqueue alone (the queue is not
// started): 8 goroutines enqueue b.N runs; reported: enqueues/s, the
// process's CPU and the server backends' CPU per enqueue, grouped and with
// every enqueue alone (its own transaction, as before the group commit).
func BenchmarkEnqueue_Postgres(b *testing.B) {
	for _, mode := range []string{"grouped", "alone"} {
		b.Run(mode, func(b *testing.B) {
			d := testdbs.Postgres(b)
			q, err := queue.Open(context.Background(), d, queue.Config{MaxQueueDepth: 1 << 30}, complete(d))
			if err != nil {
				b.Fatal(err)
			}
			if mode == "alone" {
				q.NoEnqueueGroup()
			}
			server := backendCPU(b, d)
			prefix := fmt.Sprintf("e%d-", time.Now().UnixNano())
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			var srv0 time.Duration
			if server != nil {
				srv0 = server()
			}
			enqueueN(b, q, prefix, b.N, nil)
			elapsed, cpu := time.Since(start), cpuTime()-cpu0
			b.StopTimer()
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/enqueue")
			if server != nil {
				b.ReportMetric(float64((server()-srv0).Microseconds())/float64(b.N), "server-cpu-us/enqueue")
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "enqueues/s")
		})
	}
}

// An enqueue group commits alone (groupcommit.Alone), in a transaction of its own:
// it commits while the pipeline group the runs' claims and saves share is
// held up, instead of waiting for that group and then holding the next.
func TestEnqueue_PostgresGroupCommitsBesideHeldRunWrites(t *testing.T) {
	t.Parallel()
	// A query bound far beyond the wait below: the held claim keeps its
	// group in flight for the whole test instead of giving up after the
	// default 5 s (an enqueue that waits for the group would then pass).
	d := testdbs.PostgresConfig(t, postgres.Config{QueryTimeout: 2 * time.Minute})
	wp := d.Driver().(db.SQLWriter).SQLWriter()
	ctx := context.Background()
	tx, err := wp.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var pid int
	if err := tx.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	// Before the queue starts: enqueue a run and hold its row, so that its
	// claim, in a pipeline group, waits on the row.
	q := openQueueWith(t, d, queue.Config{PollInterval: 50 * time.Millisecond}, complete(d), func(q *queue.Queue) {
		s, r, j := pending("held", "u1")
		if _, _, err := q.Enqueue(ctx, s, r, j); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM "`+wp.Schema+`".agno_runs WHERE run_id = 'held' FOR UPDATE`); err != nil {
			t.Fatal(err)
		}
	})
	// The claim's backend and when its statement began: the same wait
	// must still be on after the enqueue.
	waiting := func() (blocked string) {
		wp.DB.QueryRowContext(ctx, `SELECT pid::text || ' ' || query_start::text FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&blocked)
		return blocked
	}
	var claim string
	waitFor(t, "the held run's claim to wait on its row", func() bool {
		claim = waiting()
		return claim != ""
	})

	done := make(chan error, 1)
	go func() {
		s, r, j := pending("beside", "u1")
		_, _, err := q.Enqueue(ctx, s, r, j)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("enqueue beside the held group: %v", err)
		}
	case <-time.After(20 * time.Second):
		tx.Rollback()
		t.Fatalf("the enqueue waited for the pipeline group of the runs' claims and saves: %v", <-done)
	}
	if now := waiting(); now != claim {
		t.Fatalf("the enqueue committed after the held group ended (claim waiting %q, now %q)", claim, now)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"held", "beside"} {
		waitFor(t, id+" completed", func() bool {
			row, err := d.GetRun(ctx, id)
			return err == nil && row.Status == run.StatusCompleted
		})
	}
}

// An enqueue group goes without the queue-depth count while its last count
// is fresh and its estimate (that count plus its own enqueues since) leaves
// the queue at most half full; past half it counts every time, so the
// bound stays exact for one process.
func TestEnqueue_PostgresDepthCountSkippedFarBelowTheBound(t *testing.T) {
	d := testdbs.Postgres(t)
	cfg := testCfg()
	cfg.MaxQueueDepth = 6
	q, err := queue.Open(context.Background(), d, cfg, complete(d)) // not started: jobs stay queued
	if err != nil {
		t.Fatal(err)
	}
	q.TrustDepthCount(time.Hour)
	var last time.Time
	for i, want := range []string{"counted", "skipped", "skipped", "counted", "counted", "counted", "full"} {
		s, r, j := pending(fmt.Sprintf("d%d", i), "u1")
		_, _, err := q.Enqueue(context.Background(), s, r, j)
		at := q.DepthCounted()
		got := "skipped"
		switch {
		case errors.Is(err, queue.ErrQueueFull):
			got = "full"
		case err != nil:
			t.Fatalf("enqueue %d: %v", i, err)
		case !at.Equal(last):
			got = "counted"
		}
		if got != want {
			t.Fatalf("enqueue %d (%d queued before): %s, want %s", i, i, got, want)
		}
		last = at
	}
}

// A count older than the group trusts is made again: the queue another
// process filled meanwhile refuses the next enqueue, though the stale
// estimate was far below the bound.
func TestEnqueue_PostgresStaleDepthCountSeesOtherProcesses(t *testing.T) {
	d := testdbs.Postgres(t)
	cfg := testCfg()
	cfg.MaxQueueDepth = 4
	open := func() *queue.Queue {
		q, err := queue.Open(context.Background(), d, cfg, complete(d)) // not started: jobs stay queued
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	a, b := open(), open()
	ctx := context.Background()
	enqueue := func(q *queue.Queue, id string) error {
		s, r, j := pending(id, "u1")
		_, _, err := q.Enqueue(ctx, s, r, j)
		return err
	}
	a.TrustDepthCount(time.Hour)
	if err := enqueue(a, "a0"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := enqueue(b, fmt.Sprintf("b%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	a.TrustDepthCount(time.Nanosecond) // a's count (1 queued) is now stale
	if err := enqueue(a, "a1"); !errors.Is(err, queue.ErrQueueFull) {
		t.Fatalf("a's enqueue past the bound another process reached: %v, want ErrQueueFull", err)
	}
}
