package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// BadRunIDConflict is the bad-row kind of a legacy run whose run_id the runs
// table already holds for another session: run_id is the table's key, so the
// run cannot be copied under its own session.
const BadRunIDConflict = "run_id_conflict"

// lookupChunk bounds the run ids of one look-up statement.
const lookupChunk = 400

// ownersOf returns run_id → session_id for the given runs' ids the runs
// table holds, keyed by the stored run_id. A nil q stands for a runs table
// that does not exist yet (a dry run of the first copy).
func (m *Manager) ownersOf(ctx context.Context, q queryer, rows []db.Run) (map[string]string, error) {
	have := make(map[string]string, len(rows))
	if q == nil {
		return have, nil
	}
	for chunk := range slices.Chunk(rows, lookupChunk) {
		ids := make([]any, len(chunk))
		for i := range chunk {
			ids[i] = chunk[i].RunID
		}
		query := m.q("SELECT run_id, session_id FROM " + m.qualify(m.tables.Runs) + " WHERE run_id IN (" +
			strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")")
		rs, err := q.QueryContext(ctx, query, ids...)
		if err != nil {
			return nil, fmt.Errorf("migrate: look up copied runs: %w", err)
		}
		for rs.Next() {
			var id, sid string
			if err := rs.Scan(&id, &sid); err != nil {
				rs.Close()
				return nil, err
			}
			have[id] = sid
		}
		if err := rs.Close(); err != nil {
			return nil, err
		}
		if err := rs.Err(); err != nil {
			return nil, err
		}
	}
	return have, nil
}

func conflictRow(r db.Run, owner string) BadRow {
	return BadRow{SessionID: r.SessionID, Position: int(*r.RunIndex), Kind: BadRunIDConflict,
		Detail: fmt.Sprintf("run_id %s is already in the runs table for session %s; run_id is its key, so this run stays in the legacy runs column", r.RunID, owner)}
}

// confirmInserted returns how many runs of inserted the runs table now
// holds under their own session, and the conflicts among the rest (a
// concurrent writer took their run_id after the look-up). Where the affected
// count cannot tell (MySQL's found-rows flag, which the mysql driver sets,
// counts a skipped row as written), only reading the rows back is exact.
func (m *Manager) confirmInserted(ctx context.Context, q queryer, inserted []db.Run) (int64, []BadRow, error) {
	have, err := m.ownersOf(ctx, q, inserted)
	if err != nil {
		return 0, nil, err
	}
	var n int64
	var conflicts []BadRow
	for _, r := range inserted {
		if owner, ok := have[r.RunID]; ok && owner == r.SessionID {
			n++
			continue
		}
		owner := "(another session; the key matched under the column's collation)"
		if o, ok := have[r.RunID]; ok {
			owner = o
		}
		conflicts = append(conflicts, conflictRow(r, owner))
	}
	return n, conflicts, nil
}

// needsConfirm reports whether an insert's affected count can differ from
// the runs it wrote: always on MySQL (found rows), elsewhere when it is short
// of the rows sent.
func (m *Manager) needsConfirm(sent int, affected int64) bool {
	return m.sd.Upsert == sqlstore.OnDuplicateKey || affected != int64(sent)
}

// Uncopied is what a scan of the legacy runs column found that the runs
// table does not hold.
type Uncopied struct {
	// UncopiedRuns counts legacy elements not in the runs table under their
	// session, or changed since they were copied (ChangedRuns), plus whole
	// legacy values that cannot be read (each counts as one).
	UncopiedRuns int64 `json:"uncopied_runs"`
	// ChangedRuns counts the legacy runs a 2.x process changed after Up
	// copied them whose change the runs table lacks: the next Up copies it
	// where the row was not written since, the rest are conflicts
	// (BadRunEditedBothSides). Counted in UncopiedRuns too.
	ChangedRuns int64 `json:"changed_runs"`
	// UncopiedSessions counts the sessions holding them; UncopiedExamples
	// names the first few.
	UncopiedSessions int64    `json:"uncopied_sessions"`
	UncopiedExamples []string `json:"uncopied_examples,omitempty"`
}

// maxExamples bounds Uncopied.Examples.
const maxExamples = 5

// scanUncopied reads the whole legacy column in batches and counts what the
// runs table lacks: runs Up has not copied yet (written after it, or after
// an interrupted copy passed their session), runs a 2.x process changed
// after their copy (see partition) and runs it cannot copy (bad rows,
// run_id conflicts).
func (m *Manager) scanUncopied(ctx context.Context, q queryer, trusted bool, records ledger) (Uncopied, error) {
	var u Uncopied
	rd := m.newLegacyReader(q, "", false, nil)
	for {
		batch, err := rd.next(ctx)
		if err != nil || len(batch) == 0 {
			return u, err
		}
		rows, bad := m.convertBatch(batch, trusted)
		p, err := m.partitionCopied(ctx, q, records, rows)
		if err != nil {
			return u, err
		}
		per := map[string]bool{}
		for _, b := range append(bad, p.conflicts...) {
			u.UncopiedRuns++
			per[b.SessionID] = true
		}
		for _, r := range p.missing {
			u.UncopiedRuns++
			per[r.SessionID] = true
		}
		for _, r := range p.recopy {
			u.UncopiedRuns++
			per[r.run.SessionID] = true
		}
		u.ChangedRuns += p.changed
		for _, lr := range batch { // in session order
			if per[lr.s.SessionID] {
				u.UncopiedSessions++
				if len(u.UncopiedExamples) < maxExamples {
					u.UncopiedExamples = append(u.UncopiedExamples, lr.s.SessionID)
				}
			}
		}
	}
}
