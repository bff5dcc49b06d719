package queue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// benchThroughput enqueues b.N background runs of an agent with the
// scripted model (no latency) from 8 goroutines and waits until all are
// COMPLETED: runs/s enqueue-to-completed, and the queue wait (enqueue to
// claim) p50/p99.
func benchThroughput(b *testing.B, d *db.DB) {
	a, err := agent.New(agent.Config{ID: "a1", Name: "Bench", Model: scripted.Reply("ok"), DB: d})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	enqueued := map[string]time.Time{}
	waits := make([]time.Duration, 0, b.N)
	done := make(chan struct{}, b.N)
	h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
		mu.Lock()
		waits = append(waits, time.Since(enqueued[j.ID]))
		mu.Unlock()
		out, err := a.Run(ctx, run.TextInput("hi"), agent.WithRunID(j.ID), agent.WithSessionID(j.SessionID), agent.WithUserID(j.UserID))
		done <- struct{}{}
		if out == nil {
			return "", err
		}
		return out.Status, nil
	}
	q, err := queue.Open(context.Background(), d, queue.Config{PollInterval: 50 * time.Millisecond, MaxQueueDepth: 1 << 30}, h)
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
	b.StopTimer()
	slices.Sort(waits)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(waits[len(waits)/2].Microseconds())/1000, "wait-p50-ms")
	b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds())/1000, "wait-p99-ms")
}

func BenchmarkThroughput_SQLite(b *testing.B)   { benchThroughput(b, testdbs.SQLite(b)) }
func BenchmarkThroughput_Postgres(b *testing.B) { benchThroughput(b, testdbs.Postgres(b)) }
