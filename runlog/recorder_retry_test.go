package runlog_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/faultproxy"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/runlog"
)

// lockedLog opens a log whose calls time out after bound, and returns a
// lock of its table held by another connection until the returned release
// is called: on SQLite another handle's write transaction on the file, on
// Postgres an ACCESS EXCLUSIVE lock of the table, on MariaDB the table's
// rows locked FOR UPDATE.
type lockedLog func(t *testing.T, bound time.Duration) (l *runlog.Log, lock func() (release func()))

var lockedLogs = map[string]lockedLog{
	"sqlite": func(t *testing.T, bound time.Duration) (*runlog.Log, func() func()) {
		path := filepath.Join(t.TempDir(), "agentry.db")
		d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, QueryTimeout: bound})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		other, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, QueryTimeout: testdbs.QueryTimeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { other.Close() })
		st, ok := sqlstore.FromDB(other)
		if !ok {
			t.Fatal("not a sqlstore")
		}
		return openLog(t, d), func() func() {
			return holdLock(t, st.SQL(), `CREATE TABLE IF NOT EXISTS lock_holder (x INTEGER)`, `INSERT INTO lock_holder VALUES (1)`)
		}
	},
	"postgres": func(t *testing.T, bound time.Duration) (*runlog.Log, func() func()) {
		d := testdbs.PostgresConfig(t, postgres.Config{QueryTimeout: bound})
		l := openLog(t, d)
		wp := d.Driver().(db.SQLWriter).SQLWriter()
		return l, func() func() {
			return holdLock(t, wp.DB, `LOCK TABLE "`+wp.Schema+`"."`+runlog.Table+`" IN ACCESS EXCLUSIVE MODE`)
		}
	},
	// MariaDB: a transaction that locks every row of the table and the gap
	// after the last (REPEATABLE READ's next-key locks), so that every
	// insert waits for it.
	"mysql": func(t *testing.T, bound time.Duration) (*runlog.Log, func() func()) {
		d, _ := mysqlBound(t, bound, false)
		l := openLog(t, d)
		wp := d.Driver().(db.SQLWriter).SQLWriter()
		return l, func() func() {
			return holdLock(t, wp.DB, "SELECT seq FROM `"+runlog.Table+"` FOR UPDATE")
		}
	},
}

func openLog(t *testing.T, d *db.DB) *runlog.Log {
	t.Helper()
	l, err := runlog.Open(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// holdLock runs stmts in a transaction of its own connection and keeps it
// open until release.
func holdLock(t *testing.T, pool *sql.DB, stmts ...string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			tx.Rollback()
			conn.Close()
		})
	}
	// A test that fails holding the lock still lets its cleanup drop the
	// database.
	t.Cleanup(release)
	return release
}

// waitFor polls cond for up to 30s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 30s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A write that fails (the database is locked by another connection past
// the query timeout) does not poison the attempt: its events and the later
// ones are written once the lock is gone, in order, numbered without gap,
// none twice, and Close reports success.
func TestRecorder_FailedWriteIsWrittenAgain(t *testing.T) {
	for name, open := range lockedLogs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, lock := open(t, 300*time.Millisecond)
			ctx := context.Background()
			var logs lockedBuffer
			const runID = "run-retry"
			rec := l.Record(ctx, runID, 1, slog.New(slog.NewJSONHandler(&logs, nil)))
			i := 0
			add := func(n int) {
				for range n {
					rec.Add(content(runID, i))
					i++
				}
			}
			add(3)
			waitFor(t, "the first events stored", func() bool { c, _ := l.Count(ctx, runID); return c == 3 })
			release := lock()
			add(3)
			waitFor(t, "a failed write", func() bool { return strings.Contains(logs.String(), "runlog: store events") })
			add(3) // added while writes fail
			release()
			add(3)
			rec.Add(completed(runID))
			if err := rec.Close(); err != nil {
				t.Fatalf("close after the database recovered: %v", err)
			}
			got, err := l.Read(ctx, runID, -1, 100)
			if err != nil {
				t.Fatal(err)
			}
			checkSeq(t, got, 0)
			if len(got) != i+1 || !got[i].Final {
				t.Fatalf("stored %d events, want %d and the terminal one", len(got), i)
			}
			for k, r := range got[:i] {
				var ev struct{ Content string }
				if err := json.Unmarshal(r.Data, &ev); err != nil || ev.Content != fmt.Sprintf("c%d", k) {
					t.Fatalf("event %d: %s (%v)", k, r.Data, err)
				}
			}
			if !strings.Contains(logs.String(), "stored again after failed writes") {
				t.Fatalf("no note of the recovery: %s", logs.String())
			}
		})
	}
}

// A commit whose answer is lost (the server committed, the connection
// dropped before it said so) is not written a second time: the next write
// finds it stored and goes on after it.
func TestRecorder_LostCommitAnswerIsNotWrittenTwice(t *testing.T) {
	// The bytes that commit: pgx's simple-protocol Query, go-sql-driver's
	// COM_QUERY.
	for name, open := range map[string]func(t *testing.T) (*db.DB, *faultproxy.Proxy, []byte){
		"postgres": func(t *testing.T) (*db.DB, *faultproxy.Proxy, []byte) {
			d, p := proxiedPostgres(t, 5*time.Second)
			return d, p, []byte("commit\x00")
		},
		"mysql": func(t *testing.T) (*db.DB, *faultproxy.Proxy, []byte) {
			d, p := mysqlBound(t, 5*time.Second, true)
			return d, p, []byte("\x03COMMIT")
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, p, commit := open(t)
			ctx := context.Background()
			l := openLog(t, d)
			var logs lockedBuffer
			const runID = "run-lost-ack" // no "commit" in it: the proxy matches the bytes sent
			rec := l.Record(ctx, runID, 1, slog.New(slog.NewJSONHandler(&logs, nil)))
			rec.Add(content(runID, 0))
			waitFor(t, "the first event stored", func() bool { c, _ := l.Count(ctx, runID); return c == 1 })
			p.LoseReplyTo(commit)
			rec.Add(content(runID, 1))
			rec.Add(content(runID, 2))
			waitFor(t, "a failed write", func() bool { return strings.Contains(logs.String(), "runlog: store events") })
			rec.Add(content(runID, 3))
			rec.Add(completed(runID))
			if err := rec.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			got, err := l.Read(ctx, runID, -1, 100)
			if err != nil {
				t.Fatal(err)
			}
			checkSeq(t, got, 0)
			var contents []string
			for _, r := range got {
				var ev struct{ Content string }
				if err := json.Unmarshal(r.Data, &ev); err != nil {
					t.Fatal(err)
				}
				contents = append(contents, ev.Content)
			}
			if want := "c0 c1 c2 c3 "; strings.Join(contents, " ") != want || !got[len(got)-1].Final {
				t.Fatalf("the log holds %q, want %q and the terminal event", strings.Join(contents, " "), want)
			}
		})
	}
}
