package migrate_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// heapPeak samples live heap bytes every few milliseconds until stopped and
// returns the high-water mark.
func heapPeak() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	wg.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// BenchmarkUp_CopyRuns measures the 3.0.0 copy of sessions × 20 runs of
// ~2 KB on SQLite and Postgres: runs/s and the heap high-water mark, at two
// database sizes (the peak must not grow with the size). Run with
// -benchtime=1x: each iteration builds a fresh 2.x database untimed.
func BenchmarkUp_CopyRuns(b *testing.B) {
	for _, v := range []variant{variants[1], variants[3]} {
		for _, n := range benchSizes() {
			b.Run(fmt.Sprintf("%s/sessions=%d", v.dialect, n), func(b *testing.B) {
				b.ReportAllocs()
				const runsPer = 20
				var runs, heap float64
				var elapsed, cpu time.Duration
				for b.Loop() {
					b.StopTimer()
					f := newFixture(b, v)
					if err := migratetest.Insert(context.Background(), f.db, f.layout, migratetest.Generate(1, n, runsPer, 2048)); err != nil {
						b.Fatal(err)
					}
					m := f.manager(b, func(c *migrate.Config) { c.BatchSize = 0 })
					runtime.GC()
					stop := heapPeak()
					start := time.Now()
					cpu0 := cpuTime()
					b.StartTimer()
					sum, err := m.Up(context.Background(), "")
					b.StopTimer()
					elapsed += time.Since(start)
					cpu += cpuTime() - cpu0
					peak := stop()
					if err != nil {
						b.Fatal(err)
					}
					if sum.RunsCopied != int64(n*runsPer) {
						b.Fatalf("copied %d runs, want %d", sum.RunsCopied, n*runsPer)
					}
					runs += float64(sum.RunsCopied)
					heap = max(heap, float64(peak))
					b.StartTimer()
				}
				b.ReportMetric(runs/elapsed.Seconds(), "runs/s")
				b.ReportMetric(heap/(1<<20), "peak-heap-MiB")
				// CPU seconds of this process: the rate on an idle machine, where
				// wall-clock runs/s is skewed by other load on shared cores.
				b.ReportMetric(runs/cpu.Seconds(), "runs/cpu-s")
			})
		}
	}
}

// BenchmarkUp_PeakRSS runs the copy in a separate process (the test binary as
// a migrating child, as the kill/resume tests do) and reports that process's
// peak resident set (getrusage ru_maxrss) at two database sizes: memory is
// bounded by the batch, so the peak must not grow with the database.
func BenchmarkUp_PeakRSS(b *testing.B) {
	for _, v := range []variant{variants[1], variants[3]} {
		for _, n := range benchSizes() {
			b.Run(fmt.Sprintf("%s/sessions=%d", v.dialect, n), func(b *testing.B) {
				var rss float64
				for b.Loop() {
					b.StopTimer()
					f := newFixture(b, v)
					if err := migratetest.Insert(context.Background(), f.db, f.layout, migratetest.Generate(1, n, 20, 2048)); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					c := startChild(b, f, 0)
					if last := c.wait(b); !strings.HasPrefix(last, fmt.Sprintf("done %d ", n*20)) {
						b.Fatalf("child ended with %q, want done %d", last, n*20)
					}
					ru, ok := c.cmd.ProcessState.SysUsage().(*syscall.Rusage)
					if !ok {
						b.Fatal("no rusage for the child process")
					}
					rss = max(rss, float64(ru.Maxrss)/1024) // Linux reports KiB
				}
				b.ReportMetric(rss, "peak-rss-MiB")
			})
		}
	}
}

// benchSizes are the database sizes (sessions) the copy benchmarks compare;
// -short (CI's run-once check that they still work) uses small ones.
func benchSizes() []int {
	if testing.Short() {
		return []int{200, 1_000}
	}
	return []int{2_000, 10_000}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
