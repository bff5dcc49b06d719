package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
)

// BenchmarkWriteAmplification stores N runs of ~2 KB in ONE session, one
// UpsertRun each, and reports the bytes written: the WAL appended by the
// commits (measured before manual truncating checkpoints) plus the main
// file's growth.
// Run with -benchtime=1x.
func BenchmarkWriteAmplification(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var walBytes, growth int64
			for b.Loop() {
				b.StopTimer()
				path := filepath.Join(b.TempDir(), "wa.db")
				d, checkpoint := walCounted(b, path)
				if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
					b.Fatal(err)
				}
				checkpoint()
				size0 := fileSize(b, path)
				rows := dbtest.BenchRuns("s", n)
				b.StartTimer()
				for i, r := range rows {
					if _, err := d.UpsertRun(ctx, r); err != nil {
						b.Fatal(err)
					}
					if (i+1)%500 == 0 {
						walBytes += checkpoint()
					}
				}
				b.StopTimer()
				walBytes += checkpoint()
				growth += fileSize(b, path) - size0
				d.Close()
				b.StartTimer()
			}
			runs := float64(int64(b.N) * int64(n))
			b.ReportMetric(float64(walBytes+growth)/runs, "bytes/run")
			b.ReportMetric(float64(walBytes)/runs, "wal-bytes/run")
			b.ReportMetric(float64(growth)/runs, "file-growth/run")
		})
	}
}

// walCounted opens a store at path with automatic checkpoints off, so the
// WAL only grows; checkpoint returns the WAL's size (what the commits since
// the last call appended) and truncates it.
func walCounted(b *testing.B, path string) (d *db.DB, checkpoint func() int64) {
	b.Helper()
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	st, _ := sqlstore.FromDB(d)
	w := st.SQL()
	if _, err := w.ExecContext(ctx, "PRAGMA wal_autocheckpoint=0"); err != nil {
		b.Fatal(err)
	}
	return d, func() int64 {
		wal := fileSize(b, path+"-wal")
		var busy, log, done int64
		if err := w.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &log, &done); err != nil || busy != 0 {
			b.Fatalf("checkpoint: busy=%d %v", busy, err)
		}
		return wal
	}
}

// BenchmarkWALPerTurn stores 1,000 runs of ~2 KB in one session the way a
// conversation turn that changes its session does (one SaveRun with the
// session row and the run: updated_at moves every turn) and reports the WAL
// bytes a turn appends and the WAL frames (pages) it writes.
// Run with -benchtime=1x.
func BenchmarkWALPerTurn(b *testing.B) {
	const n = 1000
	b.ReportAllocs()
	var walBytes int64
	for b.Loop() {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "turn.db")
		d, checkpoint := walCounted(b, path)
		sess := &db.Session{SessionID: "s", SessionType: run.TypeAgent, AgentID: "agent", CreatedAt: 1,
			AgentData: []byte(`{"name":"Bench","model":{"id":"scripted","provider":"scripted"}}`)}
		if _, err := d.UpsertSession(ctx, sess); err != nil {
			b.Fatal(err)
		}
		checkpoint()
		rows := dbtest.BenchRuns("s", n)
		b.StartTimer()
		for i, r := range rows {
			sess.UpdatedAt = int64(i + 1)
			if _, _, err := d.SaveRun(ctx, sess, r); err != nil {
				b.Fatal(err)
			}
			if (i+1)%500 == 0 {
				walBytes += checkpoint()
			}
		}
		b.StopTimer()
		walBytes += checkpoint()
		d.Close()
		b.StartTimer()
	}
	turns := float64(int64(b.N) * n)
	b.ReportMetric(float64(walBytes)/turns, "wal-bytes/turn")
	// A frame is a page (4,096 bytes) and its 24-byte header.
	b.ReportMetric(float64(walBytes)/turns/4120, "wal-frames/turn")
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// BenchmarkGetRuns pages 20 runs out of one session of 100,000 runs (bulk
// loaded in one statement): the first page and page 2,000. p50-ns is the
// median latency.
func BenchmarkGetRuns(b *testing.B) {
	path := filepath.Join(b.TempDir(), "getruns.db")
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "big", SessionType: run.TypeAgent}); err != nil {
		b.Fatal(err)
	}
	st, _ := sqlstore.FromDB(d)
	const total = 100_000
	if _, err := st.SQL().ExecContext(ctx, `WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
		INSERT INTO agno_runs (run_id, session_id, run_type, agent_id, status, run_index, run_data, created_at, updated_at)
		SELECT printf('run-%06d', i), 'big', 'agent', 'bench', 'COMPLETED', i,
		       json_object('run_id', printf('run-%06d', i), 'content', printf('%.1000c', 'x')), 1700000000 + i, 1700000000 + i FROM c`, total-1); err != nil {
		b.Fatal(err)
	}
	if _, err := st.SQL().ExecContext(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	dbtest.BenchGetRunsPages(b, d)
}

// BenchmarkJournalStep is the step journal's overhead per step on a SQLite
// file (dbtest.BenchJournalStep).
func BenchmarkJournalStep(b *testing.B) {
	d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), "agentry.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	dbtest.BenchJournalStep(b, d)
}
