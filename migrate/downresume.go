package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// runsDropStep is the step the sessions table's progress row names while
// the sessions table's step down from 3.0.0 drops the runs table: every run
// is written back into the legacy column (committed), and the runs table may
// be gone. With it, "stamped 3.0.0 and no runs table" is a down that only
// has its bookkeeping left; without it, a runs table dropped by hand, whose
// runs the legacy column may not hold.
const runsDropStep = "down 3.0.0: runs written back, dropping the runs table"

// ErrDownInterrupted is returned by Up for a sessions table whose step down
// from 3.0.0 stopped after it wrote every run back and dropped the runs
// table (TableStatus.DownInterrupted): Down finishes it.
var ErrDownInterrupted = errors.New("migrate: a down to 2.5.6 stopped after writing every run back into the legacy runs column and dropping the runs table; run down to 2.5.6 again to finish it, then up")

// markRunsDrop records runsDropStep in place of any checkpoint (one
// transaction), after the write-back committed and before the DROP.
func (m *Manager) markRunsDrop(ctx context.Context) error {
	tx, err := m.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := m.clearCheckpoint(ctx, tx); err != nil {
		return err
	}
	q := "INSERT INTO " + m.qualify(m.tables.Progress) +
		" (table_name, step, last_session_id, sessions_done, runs_copied, updated_at) VALUES (?, ?, '', 0, 0, ?)"
	if _, err := tx.ExecContext(ctx, m.q(q), m.tables.Sessions, runsDropStep, time.Now().Unix()); err != nil {
		return fmt.Errorf("record the drop of %s: %w", m.tables.Runs, err)
	}
	return tx.Commit()
}

// runsDropMarked reports whether markRunsDrop's record is there.
func (m *Manager) runsDropMarked(ctx context.Context) (bool, error) {
	ok, err := m.cat.tableExists(ctx, m.cfg.DB, m.tables.Progress)
	if err != nil || !ok {
		return false, err
	}
	var n int
	q := "SELECT count(*) FROM " + m.qualify(m.tables.Progress) + " WHERE table_name = ? AND step = ?"
	if err := m.cfg.DB.QueryRowContext(ctx, m.q(q), m.tables.Sessions, runsDropStep).Scan(&n); err != nil {
		return false, fmt.Errorf("migrate: read the progress of %s: %w", m.tables.Sessions, err)
	}
	return n > 0, nil
}

// finishRunsDrop ends the sessions table's step down once the runs table is
// gone: it unstamps the runs table, deletes the record markRunsDrop left and
// stamps the sessions table at the version before 3.0.0, in one transaction,
// so a crash leaves either the record (Down resumes here) or the finished
// step. (Down then stamps the same version again.)
func (m *Manager) finishRunsDrop(ctx context.Context) error {
	if err := m.clearRecords(ctx); err != nil {
		return err
	}
	tx, err := m.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := m.unstamp(ctx, tx, m.tables.Runs); err != nil {
		return err
	}
	if err := m.clearCheckpoint(ctx, tx); err != nil {
		return err
	}
	if err := m.stamp(ctx, tx, m.tables.Sessions, Versions[versionIndex("3.0.0")-1]); err != nil {
		return err
	}
	return tx.Commit()
}
