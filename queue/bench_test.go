package queue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
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
func benchThroughput(b *testing.B, d *db.DB, commits *atomic.Int64, statements func() int64) {
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
	if err := q.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer q.Stop(context.Background())
	prefix := fmt.Sprintf("b%d-", time.Now().UnixNano())
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	cpu0 := cpuTime()
	var tx0, st0 int64
	if commits != nil {
		tx0 = commits.Load()
	}
	if statements != nil {
		st0 = statements()
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < b.N; i += 8 {
				id := fmt.Sprintf("%s%d", prefix, i)
				s, r, j := pending(id, "u1")
				s.AgentID, r.AgentID, j.ComponentID = "a1", "a1", "a1"
				mu.Lock()
				enqueued[id] = time.Now()
				mu.Unlock()
				if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for range b.N {
		<-done
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/run")
	if commits != nil {
		b.ReportMetric(float64(commits.Load()-tx0)/float64(b.N), "write-tx/run")
	}
	if statements != nil {
		b.ReportMetric(float64(statements()-st0)/float64(b.N), "stmts/run")
	}
	slices.Sort(waits)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(waits[len(waits)/2].Microseconds())/1000, "wait-p50-ms")
	b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds())/1000, "wait-p99-ms")
}

func BenchmarkThroughput_SQLite(b *testing.B) {
	d, commits := countedSQLite(b)
	benchThroughput(b, d, commits, sqlite.Statements)
}

func BenchmarkThroughput_Postgres(b *testing.B) { benchThroughput(b, testdbs.Postgres(b), nil, nil) }

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
