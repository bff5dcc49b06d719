package sqltools

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentryhq/agentry/tool"
)

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
