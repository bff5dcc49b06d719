package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// journalBenchTools is how many tool calls each run of
// BenchmarkJournalOverhead_SQLite makes, one per model call: a run is
// journalBenchTools+1 model calls and journalBenchTools tool calls.
const journalBenchTools = 4

// BenchmarkJournalOverhead_SQLite is the step journal's cost per step in a
// durable background run on SQLite: the same runs (a scripted agent making
// journalBenchTools tool calls, 2·journalBenchTools+1 steps) through the
// queue with the journal (as the server runs them) and without it (the
// job's fence alone). The overhead per step is the difference of cpu-us/run
// (and of stmts/run, write-tx/run) divided by the steps; without tools a
// run writes no journal step (the final save records its one model call).
func BenchmarkJournalOverhead_SQLite(b *testing.B) {
	for _, journal := range []bool{true, false} {
		b.Run(map[bool]string{true: "journal", false: "plain"}[journal], func(b *testing.B) { benchJournalRuns(b, journal) })
	}
}

func benchJournalRuns(b *testing.B, journal bool) {
	d, commits := countedSQLite(b)
	turns := make([]scripted.Turn, 0, journalBenchTools+1)
	for range journalBenchTools {
		turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "note", Args: map[string]any{}}}})
	}
	turns = append(turns, scripted.Turn{Content: "done"})
	type noArgs struct{}
	note := tool.MustFunc(tool.FuncConfig{Name: "note", Description: "Notes nothing."}, func(context.Context, noArgs) (string, error) { return "noted", nil })
	a, err := agent.New(agent.Config{ID: "a1", Name: "Steps", Model: scripted.MustNew(scripted.Config{Turns: turns}), Tools: []tool.Tool{note}, DB: d})
	if err != nil {
		b.Fatal(err)
	}
	var q *queue.Queue
	done := make(chan struct{}, b.N)
	h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
		opts := []agent.RunOption{agent.WithRunID(j.ID), agent.WithSessionID(j.SessionID), agent.WithUserID(j.UserID)}
		if journal {
			opts = append(opts, agent.WithJournal(q.Journal(), j.Attempt))
		}
		out, err := a.Run(ctx, run.TextInput("hi"), opts...)
		done <- struct{}{}
		if err != nil {
			return "", err
		}
		if len(out.Tools) != journalBenchTools {
			return "", fmt.Errorf("run %s made %d tool calls, want %d", j.ID, len(out.Tools), journalBenchTools)
		}
		return out.Status, nil
	}
	q, err = queue.Open(context.Background(), d, queue.Config{PollInterval: 50 * time.Millisecond, MaxQueueDepth: 1 << 30}, h)
	if err != nil {
		b.Fatal(err)
	}
	if err := q.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer q.Stop(context.Background())
	prefix := fmt.Sprintf("j%d-", time.Now().UnixNano())
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0, tx0, st0 := time.Now(), cpuTime(), commits.Load(), sqlite.Statements()
	enqueueN(b, q, prefix, b.N, nil)
	for range b.N {
		<-done
	}
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	for i := range b.N {
		if r, err := d.GetRun(context.Background(), fmt.Sprintf("%s%d", prefix, i)); err != nil || r.Status != run.StatusCompleted {
			b.Fatalf("run %d: %v", i, err)
		}
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/run")
	b.ReportMetric(float64(commits.Load()-tx0)/float64(b.N), "write-tx/run")
	b.ReportMetric(float64(sqlite.Statements()-st0)/float64(b.N), "stmts/run")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
}
