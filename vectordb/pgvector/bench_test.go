package pgvector

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/vectordb"
)

// BenchmarkQuery_HNSW measures a scoped vector query (k 10) on N (default
// 100,000; AGENTRY_BENCH_N) clustered 384-dim rows owned by 10 users (10%
// each, so the scope passes one row in ten), as one caller, u3: client p50
// and p99 over the timed queries, and recall@10 against an exact filtered
// scan for the first 100 of them. AGENTRY_BENCH_EF sets Config.EfSearch.
//
// Loading 100k rows and building the HNSW index takes minutes on a busy
// machine; with AGENTRY_BENCH_KEEP=1 the loaded schema
// (agentry_bench_pgv_<N>) is kept and reused by the next run.
func BenchmarkQuery_HNSW(b *testing.B) {
	n := 100_000
	if s := os.Getenv("AGENTRY_BENCH_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1000 {
			b.Fatalf("AGENTRY_BENCH_N=%q: want an integer >= 1000", s)
		}
	}
	raw, err := sql.Open("pgx", dsn())
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	schema := randName()
	keep := os.Getenv("AGENTRY_BENCH_KEEP") == "1"
	if keep {
		schema = fmt.Sprintf("agentry_bench_pgv_%d", n)
	} else {
		defer raw.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`)
	}
	ctx := context.Background()
	ef := 0
	if v := os.Getenv("AGENTRY_BENCH_EF"); v != "" {
		ef, _ = strconv.Atoi(v)
	}
	s, err := Open(ctx, Config{DB: raw, Schema: schema, Dimensions: 384, EfSearch: ef})
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
	vec := func(r *rand.Rand) []float32 {
		c := centers[r.IntN(len(centers))]
		v := make([]float32, 384)
		for j := range v {
			v[j] = c[j] + float32(r.NormFloat64()*0.8)
		}
		return v
	}
	have, err := s.Count(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if have != n {
		if err := benchLoad(ctx, raw, s, n, func() []float32 { return vec(r) }); err != nil {
			b.Fatal(err)
		}
	}
	const user = "u3"
	uctx := db.WithUserScope(ctx, user)
	qr := rand.New(rand.NewPCG(3, 4))
	queries := make([][]float32, 0, 1000)
	var lat []time.Duration
	var got [][]string
	b.ResetTimer()
	for b.Loop() {
		q := vec(qr)
		st := time.Now()
		h, err := s.Search(uctx, vectordb.Query{Mode: vectordb.Vector, Vector: q, Limit: 10})
		lat = append(lat, time.Since(st))
		if err != nil {
			b.Fatal(err)
		}
		if len(queries) < 100 {
			queries = append(queries, q)
			got = append(got, benchIDs(h, b, user))
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	hit, total := 0, 0
	for i, q := range queries {
		want, err := exactTop10(ctx, raw, s.t, user, q)
		if err != nil {
			b.Fatal(err)
		}
		for _, id := range want {
			if slices.Contains(got[i], id) {
				hit++
			}
		}
		total += len(want)
	}
	b.ReportMetric(float64(hit)/float64(total), "recall@10")
}

// benchIDs returns the hits' ids and fails on a row of another user.
func benchIDs(h []vectordb.Hit, b *testing.B, user string) []string {
	var out []string
	for _, x := range h {
		if x.UserID != user && x.UserID != "" {
			b.Fatalf("row %s of user %q returned to %s", x.ID, x.UserID, user)
		}
		out = append(out, x.ID)
	}
	return out
}

// exactTop10 is the filtered brute-force answer: the same scope, with the
// ANN indexes switched off for the transaction.
func exactTop10(ctx context.Context, raw *sql.DB, table, user string, q []float32) ([]string, error) {
	tx, err := raw.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off`); err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT id FROM `+table+` WHERE user_id = $2 OR user_id IS NULL ORDER BY embedding <=> $1::vector LIMIT 10`,
		vectorText(q), user)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// benchLoad fills the store's table with n rows in bulk (the HNSW index is
// dropped and rebuilt after with the store's own definition, as one builds
// a big index).
func benchLoad(ctx context.Context, raw *sql.DB, s *Store, n int, vec func() []float32) error {
	conn, err := raw.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var idx, def string
	if err := conn.QueryRowContext(ctx, `SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index
		WHERE indrelid = $1::regclass AND pg_get_indexdef(indexrelid) LIKE '%hnsw%'`, s.t).Scan(&idx, &def); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `TRUNCATE `+s.t+`; DROP INDEX `+idx); err != nil {
		return err
	}
	for start := 0; start < n; start += 2000 {
		var ids, users, vecs []string
		for i := start; i < min(start+2000, n); i++ {
			ids = append(ids, strconv.Itoa(i))
			users = append(users, fmt.Sprintf("u%d", i%10))
			vecs = append(vecs, vectorText(vec()))
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO `+s.t+` (id, content, content_id, user_id, embedding)
			SELECT i, 'x', 'c', u, v::vector FROM unnest($1::text[], $2::text[], $3::text[]) AS t(i, u, v)`, ids, users, vecs); err != nil {
			return err
		}
	}
	// The graph of 100k 384-dim vectors fits in 1 GB, so the build
	// stays in memory; one parallel worker at most on a 2-core machine.
	if _, err := conn.ExecContext(ctx, `SET maintenance_work_mem = '1GB'; SET max_parallel_maintenance_workers = 1`); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, def); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, `ANALYZE `+s.t)
	return err
}

func vectorText(v []float32) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
	}
	sb.WriteByte(']')
	return sb.String()
}
