package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
)

var ctx = context.Background()

// BenchmarkWriteAmplification stores N runs of ~2 KB in ONE session, one
// UpsertRun each, after a CHECKPOINT, and reports the growth of the
// sessions+runs relations (pg_total_relation_size) and WAL bytes two ways:
// wal-bytes is the pg_current_wal_lsn diff, which counts everything the
// server logged meanwhile (other databases' work on a shared server too);
// own-wal-bytes counts only the records of this schema's relations (tables,
// indexes, TOAST) and the commit records of their transactions, read with
// pg_walinspect when the extension can be created (superuser). bytes/run
// uses own-wal-bytes when available. Run with -benchtime=1x.
func BenchmarkWriteAmplification(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var walBytes, growth, own int64
			for b.Loop() {
				b.StopTimer()
				d, drop := openFreshDrop(b, postgres.Config{})
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
				rows := dbtest.BenchRuns("s", n)
				if _, err := w.ExecContext(ctx, "CHECKPOINT"); err != nil {
					b.Fatal(err)
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
				if own >= 0 {
					o, err := ownWAL(w, st.SQLDialect().Schema, lsn0)
					if err != nil {
						b.Logf("own WAL bytes not measured (%v)", err)
						own = -1
					} else {
						own += o
					}
				}
				growth += size() - size0
				drop() // each op's schema and pool: many ops must not exhaust the server's connections
				b.StartTimer()
			}
			runs := float64(int64(b.N) * int64(n))
			logged := walBytes
			if own >= 0 {
				logged = own
				b.ReportMetric(float64(own)/runs, "own-wal-bytes/run")
			}
			b.ReportMetric(float64(logged+growth)/runs, "bytes/run")
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

// ownWAL sums the WAL records since lsn0 that touch the schema's relations
// (tables, indexes, their TOAST tables and indexes), plus the commit records
// of the transactions that wrote them.
func ownWAL(w *sql.DB, schema, lsn0 string) (int64, error) {
	if _, err := w.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect"); err != nil {
		return 0, err
	}
	var n int64
	err := w.QueryRowContext(ctx, `
		WITH rels AS (
			SELECT pg_relation_filenode(c.oid)::text AS node FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE ns.nspname = $1
			UNION
			SELECT pg_relation_filenode(t.oid)::text FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
			JOIN pg_class t ON t.oid = c.reltoastrelid WHERE ns.nspname = $1 AND c.reltoastrelid <> 0
			UNION
			SELECT pg_relation_filenode(i.indexrelid)::text FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
			JOIN pg_index i ON i.indrelid = c.reltoastrelid WHERE ns.nspname = $1 AND c.reltoastrelid <> 0
		), recs AS (
			SELECT * FROM pg_get_wal_records_info($2::pg_lsn, pg_current_wal_lsn())
		), ours AS (
			SELECT r.* FROM recs r WHERE substring(r.block_ref from 'rel \d+/\d+/(\d+)') IN (SELECT node FROM rels)
		)
		SELECT COALESCE((SELECT SUM(record_length) FROM ours), 0) +
		       COALESCE((SELECT SUM(record_length) FROM recs WHERE resource_manager = 'Transaction'
		                 AND xid IN (SELECT xid FROM ours WHERE xid <> '0')), 0)`, schema, lsn0).Scan(&n)
	return n, err
}

// BenchmarkJournalStep is the step journal's overhead per step on Postgres
// (dbtest.BenchJournalStep).
func BenchmarkJournalStep(b *testing.B) {
	dbtest.BenchJournalStep(b, openFresh(b, postgres.Config{}))
}
