package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/migrate"
)

// openReadOnly opens the fixture's server database read-only with its driver.
func (f *fixtureDB) openReadOnly(t *testing.T) *db.DB {
	t.Helper()
	ctx := context.Background()
	var d *db.DB
	var err error
	switch f.dialect {
	case postgresName:
		d, err = postgres.Open(ctx, postgres.Config{DSN: f.dsn, Schema: f.layout.Schema, ReadOnly: true})
	case mysqlName:
		d, err = mysql.Open(ctx, mysql.Config{DSN: f.dsn, ReadOnly: true})
	default:
		t.Fatalf("openReadOnly: %s", f.dialect)
	}
	if err != nil {
		t.Fatalf("open read-only: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestDown_ServerRefusesBeforeChangingAnythingWhenAStepCannotRun: on
// Postgres and MariaDB, where no step down rebuilds a table, an object that
// makes one of its statements fail (a view over a column or table it drops,
// a CHECK constraint or generated column naming user_id, a foreign key into
// the runs table) stops Down before the first table moves, naming the
// table; a dry run says the same. Each table steps on its own (and MySQL's
// DDL commits by itself), so a refusal found at the step would leave the
// database at mixed versions.
func TestDown_ServerRefusesBeforeChangingAnythingWhenAStepCannotRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, dialect string
		// blocker returns the statements that create the blocking object.
		blocker func(f *fixtureDB) []string
		table   string
	}{
		{"postgres/view over knowledge.user_id", "postgres", func(f *fixtureDB) []string {
			return []string{"CREATE VIEW " + f.table("knowledge_owners") + " AS SELECT id, user_id FROM " + f.table("agno_knowledge")}
		}, "agno_knowledge"},
		{"postgres/view over the runs table", "postgres", func(f *fixtureDB) []string {
			return []string{"CREATE VIEW " + f.table("run_report") + " AS SELECT run_id, status FROM " + f.table("agno_runs")}
		}, "agno_runs"},
		{"mysql/check constraint naming evals.user_id", "mysql", func(f *fixtureDB) []string {
			return []string{"ALTER TABLE agno_eval_runs ADD CONSTRAINT ck_owner CHECK (user_id IS NULL OR user_id <> name)"}
		}, "agno_eval_runs"},
		{"mysql/generated column over knowledge.user_id", "mysql", func(f *fixtureDB) []string {
			return []string{"ALTER TABLE agno_knowledge ADD COLUMN owner_len INT AS (LENGTH(user_id)) VIRTUAL"}
		}, "agno_knowledge"},
		{"mysql/foreign key into the runs table", "mysql", func(f *fixtureDB) []string {
			return []string{"CREATE TABLE run_notes (id BIGINT PRIMARY KEY, run_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, " +
				"CONSTRAINT fk_run_notes_run FOREIGN KEY (run_id) REFERENCES agno_runs (run_id))"}
		}, "agno_runs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newDriverFixture(t, tc.dialect)
			f.exec(t, tc.blocker(f)...)
			// A dry run of a database opened read-only, as `agentry migrate
			// down --dry-run` opens it.
			ro := f.openReadOnly(t)
			m, release, err := migrate.ForDB(ro, migrate.Config{DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Down(ctx, "2.5.6")
			release()
			if err == nil || !strings.Contains(err.Error(), "nothing changed") || !strings.Contains(err.Error(), tc.table) {
				t.Fatalf("Down (dry run, read-only) = %v, want a refusal naming %s", err, tc.table)
			}
			for _, dry := range []bool{true, false} {
				m := f.manager(t, func(c *migrate.Config) { c.DryRun = dry })
				_, err := m.Down(ctx, "2.5.6")
				if err == nil || !strings.Contains(err.Error(), "nothing changed") || !strings.Contains(err.Error(), tc.table) {
					t.Fatalf("Down (dry run %v) = %v, want a refusal naming %s before any change", dry, err, tc.table)
				}
				assertAllAt(t, m, migrate.Latest)
				if cols := f.columns(t, "agno_metrics"); !cols["user_id"] {
					t.Fatalf("agno_metrics lost user_id although Down refused")
				}
				if cols := f.columns(t, "agno_sessions"); cols["runs"] {
					t.Fatalf("agno_sessions got the legacy runs column back although Down refused")
				}
			}
		})
	}
}

// TestDown_PostgresTrialGivesUpOnATableInUse: the check's trial takes the
// locks its DROPs need; a table another session holds (a server's open
// transaction) must not make a dry run queue behind it, holding every
// later reader of the table behind itself. It gives up after its lock
// timeout with ErrTablesInUse, naming the table, and nothing changed.
func TestDown_PostgresTrialGivesUpOnATableInUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newDriverFixture(t, "postgres")
	holder, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, "SELECT count(*) FROM "+f.table("agno_knowledge")); err != nil {
		t.Fatal(err)
	}
	m := f.manager(t, func(c *migrate.Config) { c.DryRun = true })
	dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	_, err = m.Down(dctx, "2.5.6")
	if !errors.Is(err, migrate.ErrTablesInUse) || !strings.Contains(err.Error(), "agno_knowledge") {
		t.Fatalf("Down (dry run) with agno_knowledge held = %v, want ErrTablesInUse naming it", err)
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	assertAllAt(t, m, migrate.Latest)
}
