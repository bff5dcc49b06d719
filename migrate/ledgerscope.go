package migrate

import (
	"context"
	"fmt"
)

// scopeLedger brings a copied-runs table of an earlier release, keyed by
// run_id alone, to the scoped layout: a runs_table column (empty for the
// records it holds, whose runs table is unknown) and the key (runs_table,
// run_id). Its records keep counting, for the runs table that finds them
// first (runStates), which rewrites them as its own
// (docs/adr/migrate-copy-records-scoped.md). Each dialect's change is
// atomic: one transaction (SQLite, Postgres) or one ALTER (MySQL).
func (m *Manager) scopeLedger(ctx context.Context, q queryer) error {
	cols, err := m.cat.columns(ctx, q, m.tables.CopiedRuns)
	if err != nil {
		return err
	}
	if _, ok := cols["runs_table"]; !ok {
		if err := m.addRunsTableKey(ctx); err != nil {
			return fmt.Errorf("migrate: key %s by runs table: %w", m.tables.CopiedRuns, err)
		}
	}
	var n int
	err = q.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 AS one FROM "+m.qualify(m.tables.CopiedRuns)+" WHERE runs_table = '' LIMIT 1) u").Scan(&n)
	if err != nil {
		return fmt.Errorf("migrate: look for unscoped copy records: %w", err)
	}
	m.unscopedRecords = n > 0
	return nil
}

func (m *Manager) addRunsTableKey(ctx context.Context) error {
	t := m.qualify(m.tables.CopiedRuns)
	key := m.sd.Types.Key
	if m.sd.Name == "mysql" {
		_, err := m.cfg.DB.ExecContext(ctx, "ALTER TABLE "+t+" ADD COLUMN runs_table "+key+" NOT NULL DEFAULT '' FIRST, DROP PRIMARY KEY, ADD PRIMARY KEY (runs_table, run_id)")
		return err
	}
	tx, err := m.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var stmts []string
	switch m.sd.Name {
	case "postgres":
		var pk string
		if err := tx.QueryRowContext(ctx, "SELECT conname FROM pg_constraint WHERE conrelid = to_regclass($1) AND contype = 'p'", t).Scan(&pk); err != nil {
			return fmt.Errorf("find the primary key: %w", err)
		}
		stmts = []string{
			"ALTER TABLE " + t + " ADD COLUMN runs_table " + key + " NOT NULL DEFAULT ''",
			"ALTER TABLE " + t + " DROP CONSTRAINT " + m.quote(pk) + ", ADD PRIMARY KEY (runs_table, run_id)",
		}
	default: // SQLite: a key changes only by a rebuild
		big, tmp := m.sd.Types.BigInt, m.qualify("_agentry_rebuild_"+m.tables.CopiedRuns)
		stmts = []string{
			"DROP TABLE IF EXISTS " + tmp,
			fmt.Sprintf("CREATE TABLE %s (runs_table %s NOT NULL DEFAULT '', run_id %s NOT NULL, digest %s NOT NULL, updated_at %s NOT NULL, row_digest %s, PRIMARY KEY (runs_table, run_id))",
				tmp, key, key, big, big, big),
			"INSERT INTO " + tmp + " (runs_table, run_id, digest, updated_at, row_digest) SELECT '', run_id, digest, updated_at, row_digest FROM " + t,
			"DROP TABLE " + t,
			"ALTER TABLE " + tmp + " RENAME TO " + m.quote(m.tables.CopiedRuns),
		}
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return tx.Commit()
}
