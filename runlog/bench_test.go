package runlog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/runlog"
)

// BenchmarkRecord records a run of 100 content events and its final event
// (one op); it reports the transactions it took per run.
func BenchmarkRecord(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			d := testdbs.All[name](b)
			l, err := runlog.Open(context.Background(), d)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprintf("bench-%d", i)
				rec := l.Record(context.Background(), id, 1, nil)
				for k := range 100 {
					rec.Add(content(id, k))
				}
				rec.Add(completed(id))
				if err := rec.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
