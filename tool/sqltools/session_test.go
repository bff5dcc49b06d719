package sqltools

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentryhq/agentry/migrate/migratetest"
	"github.com/agentryhq/agentry/tool"
)

// eventually polls cond until it holds or 5 seconds pass: a server ends a
// closed session's backend a moment after the client hangs up.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("after 5s: %s", what)
			return
		}
	}
}

// TestSQL_PostgresStringsReadAsTheGateReadsThem: with
// standard_conforming_strings off (here for the whole database, as ALTER
// DATABASE or ALTER ROLE would set it) a backslash escapes the quote in '...'
// and the server ends a literal elsewhere than the gate. Every transaction
// pins it on, so the gate's reading is the server's.
func TestSQL_PostgresStringsReadAsTheGateReadsThem(t *testing.T) {
	f := postgresFixture(t)
	cfg, err := pgx.ParseConfig(f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	f.exec(t, "ALTER DATABASE "+cfg.Database+" SET standard_conforming_strings = off")
	for _, mode := range []string{"cache_statement", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			dsn := f.dsn + "&default_query_exec_mode=" + mode
			readOnly := newSet(t, Config{DSN: dsn})
			notesOnly := newSet(t, Config{DSN: dsn, AllowWrite: []string{"notes"}})
			res, out := query(t, readOnly, `SELECT 'a\' AS x, current_setting('standard_conforming_strings') AS scs`, 1)
			if res.Err != nil || len(out.Rows) != 1 || out.Rows[0][0] != `a\` || out.Rows[0][1] != "on" {
				t.Fatalf(`SELECT 'a\': %s %v; want a\ with standard_conforming_strings on`, res.Content, res.Err)
			}
			// What a server reading \' as an escaped quote would run as three
			// statements is one harmless SELECT of two literals.
			smuggle := `SELECT '\', $$'; COMMIT; DELETE FROM secrets; --$$`
			for _, set := range []*tool.Set{readOnly, notesOnly} {
				if res, _ := query(t, set, smuggle, 1); res.Err != nil {
					t.Errorf("%s: %v", smuggle, res.Err)
				}
			}
			// Nor can the query turn it off first.
			if res, _ := query(t, notesOnly, `SET standard_conforming_strings = off; `+smuggle, 1); !errors.Is(res.Err, ErrRefused) {
				t.Errorf("SET ... ; %s: %s %v; want ErrRefused", smuggle, res.Content, res.Err)
			}
			// A committed write cannot turn it off for a later call.
			if res, _ := query(t, notesOnly, `UPDATE notes SET body = set_config('standard_conforming_strings', 'off', false) WHERE id = 1`, 0); res.Err != nil {
				t.Fatal(res.Err)
			}
			for range 4 {
				if res, _ := query(t, notesOnly, smuggle, 1); res.Err != nil {
					t.Errorf("after a write set it off: %s: %v", smuggle, res.Err)
				}
			}
			if n := f.count(t, "SELECT COUNT(*) FROM secrets"); n != 1 {
				t.Errorf("secrets has %d rows, want 1", n)
			}
		})
	}
}

// TestSQL_SessionStateEndsWithTheCall: what a query leaves in its session
// (a session-level advisory or user lock, a committed setting) must not
// outlive the tool call on a pooled connection.
func TestSQL_SessionStateEndsWithTheCall(t *testing.T) {
	locks := map[string]struct{ take, held string }{
		Postgres: {
			// query_to_xml runs a query given as text: no gate sees the name.
			"SELECT pg_advisory_lock(4242), pg_advisory_lock_shared(4243), pg_try_advisory_lock(4244), query_to_xml(concat('SELECT pg_advisory', '_lock(4245)'), true, true, '')",
			"SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
		},
		MySQL: {
			"SELECT GET_LOCK('%s', 0)",
			"SELECT COUNT(*) FROM (SELECT IS_USED_LOCK('%s') AS h) l WHERE h IS NOT NULL",
		},
	}
	setting := map[string]struct{ set, get string }{
		Postgres: {"UPDATE notes SET body = set_config('application_name', 'hijacked', false) WHERE id = 1", "SELECT current_setting('application_name')"},
		MySQL:    {"UPDATE notes SET body = (@hijacked := 'hijacked') WHERE id = 1", "SELECT COALESCE(@hijacked, '')"},
	}
	// A SQLite database has no session-level locks or server.
	serverFixtures(t, func(t *testing.T, f fixture) {
		lock := locks[f.dialect]
		name := migratetest.RandomName("agentry_lock_")
		take, held := strings.ReplaceAll(lock.take, "%s", name), strings.ReplaceAll(lock.held, "%s", name)
		set := newSet(t, Config{DSN: f.dsn, AllowWrite: []string{"notes"}})
		if res, _ := query(t, set, take, 1); res.Err != nil {
			t.Fatal(res.Err)
		}
		eventually(t, "the lock taken in a read is still held", func() bool { return f.count(t, held) == 0 })

		s := setting[f.dialect]
		if res, _ := query(t, set, s.set, 0); res.Err != nil {
			t.Fatal(res.Err)
		}
		for range 4 {
			res, out := query(t, set, s.get, 1)
			if res.Err != nil || len(out.Rows) != 1 || out.Rows[0][0] == "hijacked" {
				t.Fatalf("a later call sees the earlier call's session: %s %v", res.Content, res.Err)
			}
		}
	})
}
