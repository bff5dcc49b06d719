package queue_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// quietBench is River's database/sql driver without NOTIFY, as the queue
// uses it (every client polls).
type quietBench struct{ *riverdatabasesql.Driver }

func (quietBench) SupportsListenNotify() bool { return false }

type noopArgs struct{}

func (noopArgs) Kind() string { return "agentry_bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	done chan<- struct{}
}

func (w *noopWorker) Work(context.Context, *river.Job[noopArgs]) error {
	w.done <- struct{}{}
	return nil
}

// BenchmarkRiverAlone_Postgres is the engine's own ceiling on this machine:
// River with the queue's settings (database/sql driver, poll-only, 50 ms
// polls, the queue's 5 ms fetch cooldown, 32 workers, the test pool's 8
// connections) running no-op jobs,
// each inserted in its own transaction from 8 goroutines as the queue
// inserts them, with no run row, no agno_jobs row, no journal and no agent.
// BenchmarkThroughput_Postgres does all of that on top; the difference
// between the two is the queue's own cost.
//
// The InsertMany50 variant inserts 50 jobs per transaction (River's
// InsertManyTx): the cost of River's fetch, work and completion alone.
func BenchmarkRiverAlone_Postgres(b *testing.B) {
	b.Run("InsertTx", func(b *testing.B) { benchRiverAlone(b, 1) })
	b.Run("InsertMany50", func(b *testing.B) { benchRiverAlone(b, 50) })
}

func benchRiverAlone(b *testing.B, per int) {
	ctx := context.Background()
	d := testdbs.Postgres(b)
	w := d.Driver().(db.SQLWriter).SQLWriter().DB
	server := backendCPU(b, d)
	m, err := rivermigrate.New(riverdatabasesql.New(w), nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{}, b.N)
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{done: done})
	c, err := river.NewClient[*sql.Tx](quietBench{riverdatabasesql.New(w)}, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 32}},
		Workers:           workers,
		PollOnly:          true,
		FetchPollInterval: 50 * time.Millisecond,
		FetchCooldown:     5 * time.Millisecond, // queue.fetchCooldown
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer c.Stop(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0, srv0 := time.Now(), cpuTime(), time.Duration(0)
	if server != nil {
		srv0 = server()
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g * per; i < b.N; i += 8 * per {
				tx, err := w.BeginTx(ctx, nil)
				if err != nil {
					b.Error(err)
					return
				}
				params := make([]river.InsertManyParams, min(per, b.N-i))
				for k := range params {
					params[k].Args = noopArgs{}
				}
				if _, err := c.InsertManyTx(ctx, tx, params); err != nil {
					tx.Rollback()
					b.Error(err)
					return
				}
				if err := tx.Commit(); err != nil {
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
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "client-cpu-us/job")
	if server != nil {
		b.ReportMetric(float64((server()-srv0).Microseconds())/float64(b.N), "server-cpu-us/job")
	}
}
