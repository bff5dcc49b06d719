package queue_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// benchThroughput enqueues b.N background runs of an agent with the
// scripted model (no latency) from 8 goroutines and waits until all are
// COMPLETED. Each run executes as the server executes it: through the
// queue's step journal with the job's attempt. Reported: runs/s
// enqueue-to-completed, the queue wait (enqueue to claim) p50/p99, the
// process's CPU time per run (user+system, all goroutines: enqueue, River,
// the run, the database driver; SQLite runs in-process, Postgres does not),
// and, when commits is set, SQLite write transactions per run.
//
// server, when set, is the database server's CPU time so far spent on the
// benchmark's connections (Postgres on this host), reported per run;
// roundTrips, when set, the round trips made so far (a counting proxy's).
// setup, when set, is called with the queue before it starts.
func benchThroughput(b *testing.B, d *db.DB, commits *atomic.Int64, statements func() int64, server func() time.Duration,
	roundTrips func() int64, setup func(*queue.Queue)) {
	a, err := agent.New(agent.Config{ID: "a1", Name: "Bench", Model: scripted.Reply("ok"), DB: d})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	enqueued := map[string]time.Time{}
	waits := make([]time.Duration, 0, b.N)
	done := make(chan struct{}, b.N)
	var q *queue.Queue
	run1 := durableHandler(&q, a, d, func(j *queue.Job) {
		mu.Lock()
		waits = append(waits, time.Since(enqueued[j.ID]))
		mu.Unlock()
	})
	h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
		st, err := run1(ctx, j)
		done <- struct{}{}
		return st, err
	}
	q, err = queue.Open(context.Background(), d, queue.Config{PollInterval: 50 * time.Millisecond, MaxQueueDepth: 1 << 30}, h)
	if err != nil {
		b.Fatal(err)
	}
	if setup != nil {
		setup(q)
	}
	if err := q.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer q.Stop(context.Background())
	prefix := fmt.Sprintf("b%d-", time.Now().UnixNano())
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	cpu0 := cpuTime()
	var tx0, st0, rt0 int64
	var srv0 time.Duration
	if server != nil {
		srv0 = server()
	}
	if commits != nil {
		tx0 = commits.Load()
	}
	if statements != nil {
		st0 = statements()
	}
	if roundTrips != nil {
		rt0 = roundTrips()
	}
	enqueueN(b, q, prefix, b.N, func(id string, s *db.Session, r *db.Run, j *queue.Job) {
		// The session row as the server enqueues it (agentos newSession):
		// with the agent's data, so that a run ending within the second
		// it was enqueued in does not rewrite it.
		s.SetComponent(a.Component(), a.ComponentData())
		r.AgentID, j.ComponentID = "a1", "a1"
		mu.Lock()
		enqueued[id] = time.Now()
		mu.Unlock()
	})
	for range b.N {
		<-done
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/run")
	if server != nil {
		b.ReportMetric(float64((server()-srv0).Microseconds())/float64(b.N), "server-cpu-us/run")
	}
	if commits != nil {
		b.ReportMetric(float64(commits.Load()-tx0)/float64(b.N), "write-tx/run")
	}
	if statements != nil {
		b.ReportMetric(float64(statements()-st0)/float64(b.N), "stmts/run")
	}
	if roundTrips != nil {
		b.ReportMetric(float64(roundTrips()-rt0)/float64(b.N), "round-trips/run")
	}
	slices.Sort(waits)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(waits[len(waits)/2].Microseconds())/1000, "wait-p50-ms")
	b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds())/1000, "wait-p99-ms")
}

func BenchmarkThroughput_SQLite(b *testing.B) {
	d, commits := countedSQLite(b)
	benchThroughput(b, d, commits, sqlite.Statements, nil, nil, nil)
}

// BenchmarkThroughput_SQLiteExclusive is BenchmarkThroughput_SQLite on a
// file opened with the opt-in sqlite.Config.Exclusive.
func BenchmarkThroughput_SQLiteExclusive(b *testing.B) {
	d, commits := countedSQLiteWith(b, sqlite.Config{Exclusive: true})
	benchThroughput(b, d, commits, sqlite.Statements, nil, nil, nil)
}

func BenchmarkThroughput_Postgres(b *testing.B) {
	d := testdbs.Postgres(b)
	benchThroughput(b, d, nil, nil, backendCPU(b, d), nil, nil)
}

// BenchmarkThroughput_PostgresAsyncCommit is BenchmarkThroughput_Postgres
// with the opt-in postgres.Config.SynchronousCommit "off": commits return
// before their WAL is on disk, so a crash of the Postgres server (not of
// Agentry) can lose the last ~0.6 s of enqueues, claims and steps.
func BenchmarkThroughput_PostgresAsyncCommit(b *testing.B) {
	d := testdbs.PostgresConfig(b, postgres.Config{SynchronousCommit: "off"})
	benchThroughput(b, d, nil, nil, backendCPU(b, d), nil, nil)
}

// backendCPU returns the CPU time (user+system, from /proc) of the Postgres
// backends serving d's pool, or nil when they are not on this host. The
// pool's connections are all opened here (the test pool's maximum at once),
// so the backends that serve the benchmark are these; a backend that ends
// later takes its CPU time with it.
func backendCPU(b *testing.B, d *db.DB) func() time.Duration {
	w := d.Driver().(db.SQLWriter).SQLWriter().DB
	max := w.Stats().MaxOpenConnections
	var pids []int
	var conns []*sql.Conn
	for range max {
		c, err := w.Conn(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		var pid int
		if err := c.QueryRowContext(context.Background(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			b.Fatal(err)
		}
		pids = append(pids, pid)
	}
	for _, c := range conns {
		c.Close()
	}
	if _, err := procCPU(pids[0]); err != nil {
		b.Logf("server CPU not measured (is the server on this host?): %v", err)
		return nil
	}
	return func() time.Duration {
		var sum time.Duration
		for _, pid := range pids {
			t, _ := procCPU(pid)
			sum += t
		}
		return sum
	}
}

// procCPU is process pid's user and system CPU time from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command's closing parenthesis: utime is the 12th,
	// stime the 13th (fields 14 and 15 of proc(5)), in clock ticks (100/s).
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(u+st) * 10 * time.Millisecond, nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// enqueueN enqueues runs prefix0 … prefix<n-1> of user u1 from 8
// goroutines; prepare, when set, adjusts each before its enqueue.
func enqueueN(b *testing.B, q *queue.Queue, prefix string, n int, prepare func(id string, s *db.Session, r *db.Run, j *queue.Job)) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				id := fmt.Sprintf("%s%d", prefix, i)
				s, r, j := pending(id, "u1")
				if prepare != nil {
					prepare(id, s, r, j)
				}
				if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
