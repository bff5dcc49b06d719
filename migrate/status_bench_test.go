package migrate_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// BenchmarkStatus_ScanLegacyColumn measures Status on a migrated database
// that still has the legacy column (it reads the whole column to count
// uncopied runs): bytes allocated and heap high-water mark per session.
func BenchmarkStatus_ScanLegacyColumn(b *testing.B) {
	for _, v := range oneOfEach {
		for _, n := range []int{200, 1000} {
			b.Run(fmt.Sprintf("%s/sessions=%d", v.dialect, n), func(b *testing.B) {
				ctx := context.Background()
				f := newFixture(b, v)
				if err := migratetest.Insert(ctx, f.db, f.layout, migratetest.Generate(1, n, 50, 2048)); err != nil {
					b.Fatal(err)
				}
				m := f.manager(b, func(c *migrate.Config) { c.BatchSize = 0 })
				if _, err := m.Up(ctx, ""); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				var heap float64
				var ms0, ms1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms0)
				for b.Loop() {
					stop := heapPeak()
					sts, err := m.Status(ctx)
					peak := stop()
					if err != nil {
						b.Fatal(err)
					}
					for _, st := range sts {
						if st.Kind == migrate.KindSessions && st.UncopiedRuns != 0 {
							b.Fatalf("uncopied %d", st.UncopiedRuns)
						}
					}
					heap = max(heap, float64(peak))
				}
				runtime.ReadMemStats(&ms1)
				b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/float64(n), "B/session")
				b.ReportMetric(heap/(1<<20), "peak-heap-MiB")
			})
		}
	}
}
