package knowledge

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// BenchmarkInsert_LocalEmbedder measures insert throughput (chunks/s) with
// the local embedder and the embedded store on SQLite: each op inserts one
// document of 200 chunks of ~1000 characters.
func BenchmarkInsert_LocalEmbedder(b *testing.B) {
	k := newKB(b, testdbs.SQLite(b), nil)
	para := strings.Repeat("The quick brown fox jumps over the lazy dog near the riverbank. ", 15)
	chunks := 0
	start := time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var sb strings.Builder
		for j := range 200 {
			fmt.Fprintf(&sb, "%d %d %s\n\n", i, j, para)
		}
		res, err := k.Insert(context.Background(), Content{Text: sb.String()})
		if err != nil {
			b.Fatal(err)
		}
		chunks += res.Chunks
	}
	b.ReportMetric(float64(chunks)/time.Since(start).Seconds(), "chunks/s")
}
