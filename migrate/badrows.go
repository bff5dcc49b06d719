package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/db"
)

// A bad row stays recorded in the errors table until an attempt finds its
// session migratable (the user fixed or deleted it): every copy batch
// replaces the records of the sessions it reads, and Up rechecks the
// sessions recorded by earlier attempts that its copy does not reach (those
// before an interrupted copy's checkpoint, or all of them once the copy is
// done). So a resumed Up reports, and exits non-zero on, the bad rows an
// earlier attempt found.

// badState is the bookkeeping of recorded bad rows during one Up.
type badState struct {
	// prior holds the sessions with records from earlier attempts. The copy's
	// reader goroutine reads it; nobody writes it during the copy.
	prior map[string]bool
	// visited holds the prior sessions the copy re-read (writer side only).
	visited map[string]bool
}

// countRecordedBad counts the errors table's records for the sessions table
// (0 when the table does not exist yet).
func (m *Manager) countRecordedBad(ctx context.Context) (int64, error) {
	ok, err := m.cat.tableExists(ctx, m.cfg.DB, m.tables.Errors)
	if err != nil || !ok {
		return 0, err
	}
	var n int64
	q := m.q("SELECT count(*) FROM " + m.qualify(m.tables.Errors) + " WHERE table_name = ?")
	if err := m.cfg.DB.QueryRowContext(ctx, q, m.tables.Sessions).Scan(&n); err != nil {
		return 0, fmt.Errorf("migrate: count recorded bad rows: %w", err)
	}
	return n, nil
}

// loadPriorBad reads which sessions have records from earlier attempts.
func (m *Manager) loadPriorBad(ctx context.Context) (*badState, error) {
	st := &badState{prior: map[string]bool{}, visited: map[string]bool{}}
	ok, err := m.cat.tableExists(ctx, m.cfg.DB, m.tables.Errors)
	if err != nil || !ok {
		return st, err
	}
	ids, err := m.stringColumn(ctx, "SELECT DISTINCT session_id FROM "+m.qualify(m.tables.Errors)+" WHERE table_name = ?", m.tables.Sessions)
	if err != nil {
		return nil, fmt.Errorf("migrate: read recorded bad rows: %w", err)
	}
	for _, id := range ids {
		st.prior[id] = true
	}
	return st, nil
}

// priorIn returns the sessions of a batch that have earlier records.
func (b *badState) priorIn(batch []legacyRow) []string {
	if b == nil || len(b.prior) == 0 {
		return nil
	}
	var out []string
	for _, r := range batch {
		if b.prior[r.s.SessionID] {
			out = append(out, r.s.SessionID)
		}
	}
	return out
}

// clearRecorded deletes the records of the given sessions.
func (m *Manager) clearRecorded(ctx context.Context, tx *sql.Tx, ids []string) error {
	for chunk := range slices.Chunk(ids, 200) {
		q := "DELETE FROM " + m.qualify(m.tables.Errors) + " WHERE table_name = ? AND session_id IN (" +
			strings.TrimSuffix(strings.Repeat("?, ", len(chunk)), ", ") + ")"
		args := append([]any{m.tables.Sessions}, anys(chunk)...)
		if _, err := tx.ExecContext(ctx, m.q(q), args...); err != nil {
			return fmt.Errorf("migrate: clear recorded bad rows: %w", err)
		}
	}
	return nil
}

// recheckBad migrates again the sessions recorded by earlier attempts that
// this Up's copy did not read: runs that now convert are copied, records of
// sessions now fine (or gone) are deleted, and what is still bad is recorded
// again and added to sum.
func (m *Manager) recheckBad(ctx context.Context, b *badState, sum *Summary) error {
	if b == nil {
		return nil
	}
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(b.prior)) {
		if !b.visited[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	trusted, err := m.legacyTrusted(ctx)
	if err != nil {
		return err
	}
	// A dry run creates no table: whether the copy records exist holds for
	// every read.
	records := fullLedger
	if m.cfg.DryRun {
		if records, err = m.readLedger(ctx); err != nil {
			return err
		}
	}
	// Sessions are read like the copy reads them: a read ends once it holds
	// BatchBytes of JSON, and the next one's size follows the sizes read.
	limit := min(m.cfg.BatchSize, 64)
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), limit, maxRecheckIDs)]
		rows, size, cut, err := m.readLegacySessions(ctx, chunk)
		if err != nil {
			return err
		}
		// done: the sessions this read settled (all of chunk, unless it was
		// cut on BatchBytes: then those it returned; the others are read
		// again).
		done := chunk
		if cut {
			done = make([]string, len(rows))
			for i, r := range rows {
				done[i] = r.s.SessionID
			}
			rest := slices.DeleteFunc(slices.Clone(chunk), func(id string) bool { return slices.Contains(done, id) })
			if len(rest) == len(chunk) { // ids spelled otherwise than read: never read them again
				rest = nil
			}
			ids = append(rest, ids[len(chunk):]...)
		} else {
			ids = ids[len(chunk):]
		}
		if len(rows) > 0 {
			limit = max(1, min(m.cfg.BatchSize, m.cfg.BatchBytes/max(size/len(rows), 1)))
		}
		runs, bad := m.convertBatch(rows, trusted)
		var bc batchCopy
		if m.cfg.DryRun {
			p, err := m.partitionCopied(ctx, m.cfg.DB, records, runs)
			if err != nil {
				return err
			}
			bc = p.wouldCopy()
		} else if bc, err = m.rewriteRecorded(ctx, done, runs, bad); err != nil {
			return err
		}
		sum.RunsCopied += bc.inserted
		sum.RunsRecopied += bc.recopied
		bad = append(bad, bc.conflicts...)
		sum.SessionsRechecked += int64(len(done))
		for _, x := range bad {
			sum.addBad(x)
			m.log.Warn("migrate: run still not migratable", "session_id", x.SessionID, "position", x.Position, "kind", x.Kind, "detail", x.Detail)
		}
	}
	return nil
}

// maxRecheckIDs bounds the session ids of one recheck read.
const maxRecheckIDs = 200

// rewriteRecorded copies the runs the runs table lacks (or lacks the change
// of: insertMissing) and replaces the records of ids with bad (and the
// conflicts it finds), in one transaction.
func (m *Manager) rewriteRecorded(ctx context.Context, ids []string, runs []db.Run, bad []BadRow) (batchCopy, error) {
	tx, err := m.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return batchCopy{}, fmt.Errorf("migrate: begin recheck: %w", err)
	}
	defer tx.Rollback()
	// Most of these runs were copied by the earlier attempt; leaving them out
	// keeps the count exact.
	bc, err := m.insertMissing(ctx, tx, runs)
	if err != nil {
		return batchCopy{}, err
	}
	if err := m.clearRecorded(ctx, tx, ids); err != nil {
		return batchCopy{}, err
	}
	if err := m.recordBad(ctx, tx, append(bad, bc.conflicts...)); err != nil {
		return batchCopy{}, err
	}
	if err := tx.Commit(); err != nil {
		return batchCopy{}, fmt.Errorf("migrate: commit recheck: %w", err)
	}
	return bc, nil
}

// readLegacySessions reads the legacy runs of the given sessions (those
// whose column is not SQL NULL; a missing or emptied session has nothing
// left to migrate), in session order, until they hold BatchBytes of JSON:
// cut says it stopped there, with sessions of ids possibly left unread.
// size is the JSON read.
func (m *Manager) readLegacySessions(ctx context.Context, ids []string) (_ []legacyRow, size int, cut bool, _ error) {
	runs := m.quote("runs")
	if m.sd.Migration.BinaryJSON != nil {
		runs = m.jsonText(runs)
	}
	q := fmt.Sprintf("SELECT session_id, user_id, created_at, %s FROM %s WHERE %s IS NOT NULL AND session_id IN (%s) ORDER BY session_id",
		runs, m.qualify(m.tables.Sessions), m.quote("runs"), strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", "))
	rs, err := m.cfg.DB.QueryContext(ctx, m.q(q), anys(ids)...)
	if err != nil {
		return nil, 0, false, fmt.Errorf("migrate: read recorded sessions: %w", err)
	}
	defer rs.Close()
	var out []legacyRow
	for rs.Next() {
		var r legacyRow
		var user sql.NullString
		var created sessionSeconds
		if err := rs.Scan(&r.s.SessionID, &user, &created, &r.runs); err != nil {
			return nil, 0, false, fmt.Errorf("migrate: scan session: %w", err)
		}
		r.s.UserID, r.s.CreatedAt = user.String, int64(created)
		out = append(out, r)
		if size += len(r.runs); size >= m.cfg.BatchBytes {
			cut = true
			break
		}
	}
	return out, size, cut, rs.Err()
}

func anys(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
