package migrate

import (
	"context"
	"errors"
	"fmt"
)

// ErrLegacyRunsRemain is returned by CleanupLegacyRunsColumn without force
// while sessions still hold legacy runs.
var ErrLegacyRunsRemain = errors.New("migrate: sessions still hold runs in the legacy runs column; they were copied by `agentry migrate up` and are kept as a backup: run cleanup with --force to drop them")

// ErrNotMigrated is returned by CleanupLegacyRunsColumn before the sessions
// table reached 3.0.0: dropping the column then would lose runs.
var ErrNotMigrated = errors.New("migrate: the sessions table is not at 3.0.0: run `agentry migrate up` on this database (same --db) before cleanup")

// CleanupResult says what CleanupLegacyRunsColumn did.
type CleanupResult struct {
	Table string `json:"table"`
	// AlreadyGone: the column did not exist; nothing was done.
	AlreadyGone bool `json:"already_gone"`
	// Dropped: the column was dropped (false in a dry run).
	Dropped bool `json:"dropped"`
	// RowsWithRuns counts the sessions whose legacy runs were (or would be)
	// dropped with the column.
	RowsWithRuns int64 `json:"rows_with_runs"`
}

// CleanupLegacyRunsColumn drops the sessions table's 2.x runs column. Without
// force it refuses with ErrLegacyRunsRemain while any row holds runs (SQL NULL
// and JSON null do not count). A missing column is reported as AlreadyGone.
// It refuses with ErrNotMigrated unless the sessions table is at 3.0.0.
func (m *Manager) CleanupLegacyRunsColumn(ctx context.Context, force bool) (*CleanupResult, error) {
	res := &CleanupResult{Table: m.tables.Sessions}
	var release func()
	if m.readOnly && !m.cfg.DryRun {
		return nil, ErrReadOnly
	}
	if !m.cfg.DryRun {
		var err error
		if release, err = m.lock(ctx); err != nil {
			return nil, err
		}
		defer release()
	}
	stamped, err := m.readVersions(ctx)
	if err != nil {
		return nil, err
	}
	st, err := m.tableStatus(ctx, KindSessions, stamped, Latest)
	if err != nil {
		return nil, err
	}
	if !st.Exists || !st.LegacyRunsColumn {
		res.AlreadyGone = true
		return res, nil
	}
	if st.Current != Latest {
		return res, ErrNotMigrated
	}
	res.RowsWithRuns = st.RowsWithRuns
	if st.RowsWithRuns > 0 && !force {
		return res, fmt.Errorf("%w (%d sessions)", ErrLegacyRunsRemain, st.RowsWithRuns)
	}
	if m.cfg.DryRun {
		return res, nil
	}
	if _, err := m.cfg.DB.ExecContext(ctx, "ALTER TABLE "+m.qualify(m.tables.Sessions)+" DROP COLUMN "+m.quote("runs")); err != nil {
		return res, fmt.Errorf("migrate: drop legacy runs column of %s: %w", m.tables.Sessions, err)
	}
	res.Dropped = true
	m.log.Info("migrate: dropped legacy runs column", "table", m.tables.Sessions, "rows_with_runs", res.RowsWithRuns)
	return res, nil
}
