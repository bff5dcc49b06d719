package migrate

import (
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// ErrNotSQL is returned by ForDB for a database without versioned SQL
// tables (the memory driver).
var ErrNotSQL = errors.New("migrate: the database has no versioned SQL schema")

// ErrReadOnly is returned by Up, Down and CleanupLegacyRunsColumn on a
// database opened read-only, unless Config.DryRun.
var ErrReadOnly = errors.New("migrate: the database was opened read-only: open it for writing, or use a dry run")

// ForDB returns a Manager for a database opened by one of the SQL drivers
// (open a 2.x database with dsn.Options.SkipSchemaCheck, or the driver's
// Config.SkipSchemaCheck). The connection pool, dialect (with its schema) and
// table names come from d (cfg.Tables only names the Errors, Progress and
// CopiedRuns tables); release returns the pool and must be called when done.
func ForDB(d *db.DB, cfg Config) (m *Manager, release func(), err error) {
	sb, ok := d.Driver().(db.SQLBacked)
	if !ok {
		return nil, nil, fmt.Errorf("%w (%s)", ErrNotSQL, d.Driver().Dialect())
	}
	t, err := sb.SQLTarget()
	if err != nil {
		return nil, nil, err
	}
	st, ok := sqlstore.FromDB(d)
	if !ok {
		t.Release()
		return nil, nil, fmt.Errorf("%w (%s: not the shared SQL store)", ErrNotSQL, d.Driver().Dialect())
	}
	errs, progress, copied := cfg.Tables.Errors, cfg.Tables.Progress, cfg.Tables.CopiedRuns
	cfg.DB, cfg.Dialect, cfg.Tables = t.DB, st.SQLDialect(), st.Tables()
	cfg.Tables.Errors, cfg.Tables.Progress, cfg.Tables.CopiedRuns = errs, progress, copied
	if m, err = New(cfg); err != nil {
		t.Release()
		return nil, nil, err
	}
	m.readOnly = t.ReadOnly
	return m, t.Release, nil
}
