package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
)

var ctx = context.Background()

func runData2KB(id string) json.RawMessage {
	msgs := []map[string]string{}
	for i := range 6 {
		msgs = append(msgs, map[string]string{"role": []string{"user", "assistant"}[i%2],
			"content": fmt.Sprintf("%s message %d %s", id, i, strings.Repeat("lorem ipsum dolor ", 16))})
	}
	b, _ := json.Marshal(map[string]any{"run_id": id, "agent_id": "bench", "status": "COMPLETED", "messages": msgs,
		"metrics": map[string]int{"input_tokens": 120, "output_tokens": 80, "total_tokens": 200}})
	return b
}

// BenchmarkWriteAmplification stores N runs of ~2 KB in ONE session, one
// UpsertRun each, and reports WAL bytes generated (pg_current_wal_lsn diff;
// includes any concurrent activity on the server) and the growth of the
// sessions+runs relations (pg_total_relation_size). Run with -benchtime=1x.
func BenchmarkWriteAmplification(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var walBytes, growth int64
			for b.Loop() {
				b.StopTimer()
				d := openFresh(b, postgres.Config{})
				st, _ := sqlstore.FromDB(d)
				w := st.SQL()
				size := func() int64 {
					var s int64
					q := "SELECT pg_total_relation_size($1::regclass) + pg_total_relation_size($2::regclass)"
					if err := w.QueryRowContext(ctx, q, st.SQLDialect().Table(st.Tables().Sessions), st.SQLDialect().Table(st.Tables().Runs)).Scan(&s); err != nil {
						b.Fatal(err)
					}
					return s
				}
				lsn := func() string {
					var l string
					w.QueryRowContext(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&l)
					return l
				}
				if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
					b.Fatal(err)
				}
				rows := make([]*db.Run, n)
				for i := range rows {
					id := fmt.Sprintf("run-%06d", i)
					rows[i] = &db.Run{RunID: id, SessionID: "s", RunType: run.TypeAgent, AgentID: "bench", Status: run.StatusCompleted, RunData: runData2KB(id)}
				}
				size0, lsn0 := size(), lsn()
				b.StartTimer()
				for _, r := range rows {
					if _, err := d.UpsertRun(ctx, r); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				var diff int64
				if err := w.QueryRowContext(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint", lsn0).Scan(&diff); err != nil {
					b.Fatal(err)
				}
				walBytes += diff
				growth += size() - size0
				b.StartTimer()
			}
			runs := float64(int64(b.N) * int64(n))
			b.ReportMetric(float64(walBytes+growth)/runs, "bytes/run")
			b.ReportMetric(float64(walBytes)/runs, "wal-bytes/run")
			b.ReportMetric(float64(growth)/runs, "relation-growth/run")
		})
	}
}

// BenchmarkGetRuns pages 20 runs out of one session of 100,000 runs (bulk
// loaded with generate_series, then VACUUM ANALYZE): the first page and page
// 2,000. p50-ns is the median latency.
func BenchmarkGetRuns(b *testing.B) {
	d := openFresh(b, postgres.Config{})
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "big", SessionType: run.TypeAgent}); err != nil {
		b.Fatal(err)
	}
	st, _ := sqlstore.FromDB(d)
	runs := st.SQLDialect().Table(st.Tables().Runs)
	const total = 100_000
	if _, err := st.SQL().ExecContext(ctx, `INSERT INTO `+runs+` (run_id, session_id, run_type, agent_id, status, run_index, run_data, created_at, updated_at)
		SELECT format('run-%s', lpad(i::text, 6, '0')), 'big', 'agent', 'bench', 'COMPLETED', i,
		       jsonb_build_object('run_id', format('run-%s', lpad(i::text, 6, '0')), 'content', repeat('x', 1000)), 1700000000 + i, 1700000000 + i
		FROM generate_series(0, $1::int - 1) AS i`, total); err != nil {
		b.Fatal(err)
	}
	if _, err := st.SQL().ExecContext(ctx, "VACUUM ANALYZE "+runs); err != nil {
		b.Fatal(err)
	}
	dbtest.BenchGetRunsPages(b, d)
}
