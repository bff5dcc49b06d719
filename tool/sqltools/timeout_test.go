package sqltools

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentryhq/agentry/migrate/migratetest"
	"github.com/agentryhq/agentry/tool"
)

// lockHolder is a session of its own (not the fixture's pool) that takes a
// lock and keeps it until released. It does not look at the server's
// session list: inside its transaction Postgres would show a snapshot.
type lockHolder struct {
	exec    func(t *testing.T, sql string)
	release func() // ends the session
}

func holdLocks(t *testing.T, f fixture) lockHolder {
	t.Helper()
	ctx := context.Background()
	switch f.dialect {
	case Postgres:
		conn, err := pgx.Connect(ctx, f.dsn)
		if err != nil {
			t.Fatalf("postgres: %v", err)
		}
		return lockHolder{
			release: func() { conn.Close(context.Background()) },
			exec: func(t *testing.T, s string) {
				t.Helper()
				if _, err := conn.Exec(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			},
		}
	case MySQL:
		db, err := sql.Open("mysql", f.dsn)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			db.Close()
			t.Fatalf("mysql: %v", err)
		}
		return lockHolder{
			release: func() { conn.Close(); db.Close() },
			exec: func(t *testing.T, s string) {
				t.Helper()
				if _, err := conn.ExecContext(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			},
		}
	}
	t.Fatalf("no lock holder for %s", f.dialect)
	return lockHolder{}
}

// blockedQuery is a lock another session takes (statements separated by
// "; ") and a query of the model that waits for it; %s is a marker naming the
// query in the server's session list.
type blockedQuery struct{ hold, query string }

var blockedQueries = map[string][]blockedQuery{
	Postgres: {
		{"BEGIN; LOCK TABLE notes IN ACCESS EXCLUSIVE MODE", "SELECT COUNT(*) AS %s FROM notes"},
		{"BEGIN; UPDATE notes SET body = 'held' WHERE id = 1", "UPDATE notes SET body = '%s' WHERE id = 1"},
		// The model's attempts to lift the bound: set_config runs before
		// the lock wait (left to right), and changes nothing already armed.
		{"SELECT pg_advisory_lock(4711)", "SELECT set_config('statement_timeout', '0', true) AS %s, set_config('lock_timeout', '0', true), pg_advisory_xact_lock(4711)"},
		{"SELECT pg_advisory_lock(4712)", "SELECT set_config('statement_timeout', '1h', false) AS %s, set_config('lock_timeout', '1h', false), pg_advisory_xact_lock(4712)"},
	},
	MySQL: {
		{"LOCK TABLES notes WRITE", "SELECT COUNT(*) AS %s FROM notes"},
		{"BEGIN; UPDATE notes SET body = 'held' WHERE id = 1", "UPDATE notes SET body = '%s' WHERE id = 1"},
		// MariaDB's max_statement_time ends a GET_LOCK wait with NULL, not
		// an error: the query would look like it got an answer.
		{"SELECT GET_LOCK('%s', 0)", "SELECT GET_LOCK('%s', 10) AS g"},
		{"SELECT GET_LOCK('%s', 0)", "SELECT id, GET_LOCK('%s', 10) AS g FROM notes"},
	},
}

// serverSessions counts the server sessions running a query with the marker.
var serverSessions = map[string]string{
	Postgres: "SELECT COUNT(*) FROM pg_stat_activity WHERE query LIKE '%%s%' AND pid <> pg_backend_pid()",
	MySQL:    "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE '%%s%' AND id <> CONNECTION_ID()",
}

// pgWaiting counts lock requests left waiting in the fixture's database (on
// MariaDB a session's lock requests end with the session).
const pgWaiting = "SELECT COUNT(*) FROM pg_locks WHERE NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"

// forEachBlockedQuery runs fn for each blocked query of each server, with
// the lock held by another session for as long as fn runs, and then checks
// that the query left no session or waiting lock request behind.
func forEachBlockedQuery(t *testing.T, fn func(t *testing.T, f fixture, q string)) {
	for _, f := range []fixture{postgresFixture(t), mysqlFixture(t)} {
		t.Run(f.dialect, func(t *testing.T) {
			for i, c := range blockedQueries[f.dialect] {
				t.Run(strconv.Itoa(i), func(t *testing.T) {
					marker := migratetest.RandomName("agentry_blocked_")
					h := holdLocks(t, f)
					defer h.release()
					for _, s := range strings.Split(c.hold, "; ") {
						h.exec(t, strings.ReplaceAll(s, "%s", marker))
					}
					q := strings.ReplaceAll(c.query, "%s", marker)
					fn(t, f, q)
					sessions := strings.ReplaceAll(serverSessions[f.dialect], "%s", marker)
					eventually(t, "the blocked query's server session outlives the call: "+q, func() bool { return f.count(t, sessions) == 0 })
					if f.dialect == Postgres {
						eventually(t, "a lock request of the blocked query is left waiting", func() bool { return f.count(t, pgWaiting) == 0 })
					}
				})
			}
		})
	}
}

// TestSQL_ServerStopsAQueryAtTheTimeout: the server itself ends a query
// that waits for a lock at the toolkit's timeout, with no client deadline
// near it, and the toolkit reports it as a timeout; the model's query cannot
// lift the bound.
func TestSQL_ServerStopsAQueryAtTheTimeout(t *testing.T) {
	forEachBlockedQuery(t, func(t *testing.T, f fixture, q string) {
		k, err := New(Config{DSN: f.dsn, AllowWrite: []string{"notes"}, Timeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer k.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = k.run(ctx, runIn{Query: q})
		if !errors.Is(err, tool.ErrTimeout) || ctx.Err() != nil {
			t.Errorf("%s: %v; want tool.ErrTimeout from the server", q, err)
		}
	})
}

// TestSQL_QueryBlockedOnALockEndsAtTheTimeout: through the tool set (the
// client gives up at the timeout too), a query waiting for a lock ends with
// tool.ErrTimeout and its server session ends with it while the lock is
// still held.
func TestSQL_QueryBlockedOnALockEndsAtTheTimeout(t *testing.T) {
	forEachBlockedQuery(t, func(t *testing.T, f fixture, q string) {
		set := newSet(t, Config{DSN: f.dsn, AllowWrite: []string{"notes"}, Timeout: 500 * time.Millisecond})
		if res, _ := query(t, set, q, 1); !errors.Is(res.Err, tool.ErrTimeout) {
			t.Errorf("%s: %s %v; want tool.ErrTimeout", q, res.Content, res.Err)
		}
	})
}

// TestSQL_SQLiteQueryInterruptedAtTheTimeout: SQLite has no server to bound
// a query; the call's context interrupts it, and its connection goes back to
// the pool instead of running on.
func TestSQL_SQLiteQueryInterruptedAtTheTimeout(t *testing.T) {
	f := sqliteFixture(t)
	k, err := New(Config{DSN: f.dsn, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	kit, err := k.Toolkit()
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(nil, kit)
	if err != nil {
		t.Fatal(err)
	}
	endless := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
	if res, _ := query(t, set, endless, 1); !errors.Is(res.Err, tool.ErrTimeout) {
		t.Fatalf("%s: %s %v; want tool.ErrTimeout", endless, res.Content, res.Err)
	}
	ro := k.eng.(*sqliteEngine).ro
	eventually(t, "the interrupted query still holds its connection", func() bool { return ro.Stats().InUse == 0 })
}
