package pgvector

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/vectordb"
)

// BenchmarkQuery_HNSW measures a scoped vector query's p50 on N (default
// 10,000; AGENTRY_BENCH_N) clustered 384-dim rows of 10 users.
func BenchmarkQuery_HNSW(b *testing.B) {
	n := 10_000
	if s := os.Getenv("AGENTRY_BENCH_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	raw, schema := testSchemaB(b)
	s, err := Open(context.Background(), Config{DB: raw, Schema: schema, Dimensions: 384})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(1, 2))
	centers := make([][]float32, 100)
	for i := range centers {
		centers[i] = make([]float32, 384)
		for j := range centers[i] {
			centers[i][j] = float32(r.NormFloat64())
		}
	}
	vec := func() []float32 {
		c := centers[r.IntN(len(centers))]
		v := make([]float32, 384)
		for j := range v {
			v[j] = c[j] + float32(r.NormFloat64()*0.8)
		}
		return v
	}
	for start := 0; start < n; start += 500 {
		var rows []vectordb.Row
		for i := start; i < min(start+500, n); i++ {
			rows = append(rows, vectordb.Row{ID: fmt.Sprint(i), ContentID: "c", Content: "x", Vector: vec(), UserID: fmt.Sprintf("u%d", i%10)})
		}
		if err := s.Upsert(context.Background(), rows); err != nil {
			b.Fatal(err)
		}
	}
	ctx := db.WithUserScope(context.Background(), "u3")
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		st := time.Now()
		if _, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: vec(), Limit: 10}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(st))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}

func testSchemaB(b *testing.B) (*sql.DB, string) {
	b.Helper()
	raw, err := sql.Open("pgx", dsn())
	if err != nil {
		b.Fatal(err)
	}
	schema := randName()
	b.Cleanup(func() {
		raw.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`)
		raw.Close()
	})
	return raw, schema
}
