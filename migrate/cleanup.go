package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrLegacyRunsRemain is returned by CleanupLegacyRunsColumn without Force
// while sessions still hold legacy runs, all of them copied.
var ErrLegacyRunsRemain = errors.New("migrate: sessions still hold runs in the legacy runs column; they were copied by `agentry migrate up` and are kept as a backup: run cleanup with --force to drop them")

// ErrUncopiedRuns is returned by CleanupLegacyRunsColumn (with or without
// Force) while the legacy runs column holds runs the runs table does not,
// or holds an older version of: runs written or changed by a 2.x process
// after `agentry migrate up` (run it again to copy them) or runs it could
// not copy (bad rows, run_id conflicts, runs changed on both sides: see the
// migration errors table). Dropping the column would lose them; only
// CleanupOptions.DiscardUncopiedRuns does.
var ErrUncopiedRuns = errors.New("migrate: the legacy runs column holds runs that are not in the runs table")

// ErrNotMigrated is returned by CleanupLegacyRunsColumn before the sessions
// table reached 3.0.0: dropping the column then would lose runs.
var ErrNotMigrated = errors.New("migrate: the sessions table is not at 3.0.0: run `agentry migrate up` on this database (same --db) before cleanup")

// CleanupOptions says what CleanupLegacyRunsColumn may drop.
type CleanupOptions struct {
	// Force drops the column although sessions hold runs in it, provided
	// the runs table holds every one of them (the column is then only a
	// backup).
	Force bool
	// DiscardUncopiedRuns, with Force, drops the column even though it
	// holds runs the runs table does not: they are lost. CleanupResult
	// counts them.
	DiscardUncopiedRuns bool
}

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
	// Uncopied counts what the column holds that the runs table does not
	// (checked when RowsWithRuns > 0): lost if the column was dropped.
	Uncopied
}

// CleanupLegacyRunsColumn drops the sessions table's 2.x runs column. It
// first reads the whole column and checks that the runs table holds each of
// its runs, by run_id, under its session, and that no run changed in the
// column after Up copied it unless the row holds the change or is newer
// (Agentry wrote it, and the element did not change); it refuses with
// ErrUncopiedRuns otherwise, unless opts.DiscardUncopiedRuns. Without opts.Force it refuses
// with ErrLegacyRunsRemain while any row holds runs (SQL NULL and JSON null
// do not count). The check and the drop hold off writers to the sessions
// table in between (a lock, or a transaction that fails if one wrote), so
// a 2.x process writing meanwhile cannot lose a run. A missing column is
// reported as AlreadyGone. It refuses with ErrNotMigrated unless the
// sessions table is at 3.0.0.
func (m *Manager) CleanupLegacyRunsColumn(ctx context.Context, opts CleanupOptions) (*CleanupResult, error) {
	res := &CleanupResult{Table: m.tables.Sessions}
	if opts.DiscardUncopiedRuns && !opts.Force {
		return nil, errors.New("migrate: discarding uncopied runs (--discard-uncopied-runs) also needs --force: it widens what force drops")
	}
	if m.readOnly && !m.cfg.DryRun {
		return nil, ErrReadOnly
	}
	if !m.cfg.DryRun {
		release, err := m.lock(ctx)
		if err != nil {
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
	trusted, err := m.legacyTrusted(ctx)
	if err != nil {
		return res, err
	}
	records, err := m.readLedger(ctx)
	if err != nil {
		return res, err
	}
	check := func(q queryer) error {
		u, err := m.scanUncopied(ctx, q, trusted, records)
		if err != nil {
			return err
		}
		res.Uncopied = u
		if res.UncopiedRuns > 0 && !opts.DiscardUncopiedRuns {
			return uncopiedError(res.Uncopied)
		}
		if res.RowsWithRuns > 0 && !opts.Force {
			return fmt.Errorf("%w (%d sessions)", ErrLegacyRunsRemain, res.RowsWithRuns)
		}
		return nil
	}
	if m.cfg.DryRun {
		return res, check(m.cfg.DB)
	}
	table, col := m.qualify(m.tables.Sessions), m.quote("runs")
	if gd := m.sd.Migration.GuardedDrop; gd != nil {
		read := []string{m.qualify(m.tables.Runs)}
		if records.exists {
			read = append(read, m.qualify(m.tables.CopiedRuns))
		}
		err = gd(ctx, m.cfg.DB, table, col, read, check)
	} else {
		err = m.dropInTx(ctx, table, col, check)
	}
	if err != nil {
		if errors.Is(err, ErrUncopiedRuns) || errors.Is(err, ErrLegacyRunsRemain) {
			return res, err
		}
		return res, fmt.Errorf("migrate: drop legacy runs column of %s: %w", m.tables.Sessions, err)
	}
	res.Dropped = true
	if res.UncopiedRuns > 0 {
		m.log.Warn("migrate: dropped legacy runs column with runs not in the runs table (discarded on request)", "table", m.tables.Sessions,
			"uncopied_runs", res.UncopiedRuns, "uncopied_sessions", res.UncopiedSessions)
	}
	m.log.Info("migrate: dropped legacy runs column", "table", m.tables.Sessions, "rows_with_runs", res.RowsWithRuns)
	return res, nil
}

// dropInTx checks and drops in one transaction (SQLite: a write committed
// by another connection after the check's reads fails the drop).
func (m *Manager) dropInTx(ctx context.Context, table, col string, check func(queryer) error) error {
	tx, err := m.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := check(tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "ALTER TABLE "+table+" DROP COLUMN "+col); err != nil {
		return err
	}
	return tx.Commit()
}

func uncopiedError(u Uncopied) error {
	changed := ""
	if u.ChangedRuns > 0 {
		changed = fmt.Sprintf(", %d of them changed by a 2.x process after they were copied", u.ChangedRuns)
	}
	return fmt.Errorf("%w: %d legacy runs in %d sessions (e.g. %s)%s; dropping the column would lose them. "+
		"Run `agentry migrate up` again to copy the runs written or changed after the last one; "+
		"it records the runs it cannot copy in the migration errors table (agno_migration_errors): fix or remove them in the legacy column and run it again. "+
		"To drop them anyway: cleanup --force --discard-uncopied-runs",
		ErrUncopiedRuns, u.UncopiedRuns, u.UncopiedSessions, strings.Join(u.UncopiedExamples, ", "), changed)
}
