package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// runColumns is the insert column list of the runs table: its 3.0.0 layout
// (run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id,
// parent_run_id, status, run_index, run_data, created_at, updated_at).
var runColumns = sqlstore.Columns30(sqlstore.KindRuns)

const (
	maxRowsPerInsert  = 400     // 13 params each: well under every dialect's limit
	maxBytesPerInsert = 4 << 20 // under MySQL's default max_allowed_packet
)

// legacyRow is one sessions row read by the copy.
type legacyRow struct {
	s    legacySession
	runs []byte
}

// convertedBatch is one batch read and converted ahead of the writer.
type convertedBatch struct {
	rows     []db.Run
	bad      []BadRow
	last     string
	sessions int64
	// clear lists the batch's sessions with records from earlier attempts:
	// the batch replaces them.
	clear []string
	err   error
}

// copyPass says which part of the legacy column a copy reads and where it
// keeps its checkpoint.
type copyPass struct {
	// step names the pass in the progress table (its checkpoint resumes
	// only the same pass) and label in Progress.
	step, label string
	// until, when hasUntil, is the last session id the pass reads.
	until    string
	hasUntil bool
	// catchUp: the pass re-reads sessions an earlier copy read (counted in
	// Summary.SessionsRescanned, not SessionsScanned).
	catchUp bool
}

var (
	// firstCopy is Up's 3.0.0 step: the whole column, resumable.
	firstCopy = copyPass{step: "3.0.0", label: "copy runs"}
	// catchUpCopy reads the column again for runs written to it after the
	// copy that read their session (a 2.x process still writing).
	catchUpCopy = copyPass{step: "catch-up", label: "copy runs written after migration", catchUp: true}
)

// copyStart is where this Up's first copy began: from a checkpoint
// (resumed) or from the start.
type copyStart struct {
	from    string
	resumed bool
}

// copyRuns copies the legacy runs arrays the pass reads into the runs table,
// one transaction per batch, each committing a checkpoint. It is safe to
// rerun after a crash at any point: a run the table holds is left out unless
// its legacy element changed since it was copied and the row did not
// (partition), and the checkpoint only skips work. One goroutine reads and
// decodes the next batch while this one writes the current one; at most
// three batches are in memory. It returns where it started.
func (m *Manager) copyRuns(ctx context.Context, sum *Summary, pass copyPass) (copyStart, error) {
	last, done, copied, err := m.loadCheckpoint(ctx, pass.step)
	if err != nil {
		return copyStart{}, err
	}
	hasLast := last != "" || done > 0
	start := copyStart{from: last, resumed: hasLast}
	total, err := m.countLegacySessions(ctx)
	if err != nil {
		return start, err
	}
	trusted, err := m.legacyTrusted(ctx)
	if err != nil {
		return start, err
	}
	m.tuneCopy = nil
	if f := m.sd.Migration.TuneCopy; f != nil {
		m.tuneCopy = f(ctx, m.cfg.DB)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	batches := make(chan convertedBatch, 1)
	var until *string
	if pass.hasUntil {
		until = &pass.until
	}
	rd := m.newLegacyReader(m.cfg.DB, last, hasLast, until)
	wg.Go(func() { // owns rd from here on
		defer close(batches)
		for {
			batch, err := rd.next(ctx)
			if err == nil && len(batch) == 0 {
				return
			}
			var cb convertedBatch
			if err != nil {
				cb.err = err
			} else {
				cb.rows, cb.bad = m.convertBatch(batch, trusted)
				cb.clear = m.bad.priorIn(batch)
				cb.last, cb.sessions = batch[len(batch)-1].s.SessionID, int64(len(batch))
			}
			select {
			case batches <- cb:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	})

	var w *sql.Conn
	if !m.cfg.DryRun {
		var restore func()
		if w, restore, err = m.writerConn(ctx); err != nil {
			return start, err
		}
		defer restore()
	}
	// A dry run looks runs up where it would write them, if the table exists.
	var dryLookup queryer
	var dryRecords ledger
	if m.cfg.DryRun {
		if ok, err := m.cat.tableExists(ctx, m.cfg.DB, m.tables.Runs); err != nil {
			return start, err
		} else if ok {
			dryLookup = m.cfg.DB
		}
		if dryRecords, err = m.readLedger(ctx); err != nil {
			return start, err
		}
	}
	began := time.Now()
	var thisRun int64
	for cb := range batches {
		if cb.err != nil {
			return start, cb.err
		}
		var bc batchCopy
		if m.cfg.DryRun {
			p, err := m.partitionCopied(ctx, dryLookup, dryRecords, cb.rows)
			if err != nil {
				return start, err
			}
			m.dryClaim(&p)
			bc = p.wouldCopy()
		} else if bc, err = m.writeBatch(ctx, w, cb, pass.step, done+cb.sessions, copied); err != nil {
			return start, err
		}
		inserted, conflicts := bc.inserted, bc.conflicts
		for _, id := range cb.clear {
			m.bad.visited[id] = true
		}
		done += cb.sessions
		copied += inserted
		thisRun += inserted
		if pass.catchUp {
			sum.SessionsRescanned += cb.sessions
			sum.SessionsRechecked += int64(len(cb.clear))
		} else {
			sum.SessionsScanned += cb.sessions
		}
		sum.RunsCopied += inserted
		sum.RunsRecopied += bc.recopied
		sum.RunsSkipped += int64(len(cb.rows)) - inserted - bc.recopied - int64(len(conflicts))
		for _, b := range append(cb.bad, conflicts...) {
			sum.addBad(b)
			m.log.Warn("migrate: run not migrated", "session_id", b.SessionID, "position", b.Position, "kind", b.Kind, "detail", b.Detail)
		}
		if m.cfg.Progress != nil {
			el := time.Since(began)
			p := Progress{Step: pass.label, Table: m.tables.Sessions, SessionsDone: done, SessionsTotal: total,
				RunsCopied: copied, BadRows: sum.BadRowCount, Elapsed: el}
			if s := el.Seconds(); s > 0 {
				p.RunsPerSecond = float64(thisRun) / s
			}
			m.cfg.Progress(p)
		}
	}
	return start, ctx.Err()
}

// batchCopy is what copying one batch's runs did.
type batchCopy struct {
	inserted int64 // runs the table lacked
	recopied int64 // rows rewritten: their legacy element changed since the copy
	// conflicts: run_id conflicts (BadRunIDConflict, including runs an
	// insert skipped where the count could not tell: confirmInserted) and
	// runs changed on both sides (BadRunEditedBothSides).
	conflicts []BadRow
}

// wouldCopy is what copying p would do, as a dry run reports it (it writes
// nothing, so every recopy counts as rewritten).
func (p partition) wouldCopy() batchCopy {
	return batchCopy{inserted: int64(len(p.missing)), recopied: int64(len(p.recopy)), conflicts: p.conflicts}
}

// dryClaim makes a dry run see the runs earlier batches would have copied,
// as Up sees them in the runs table once it wrote them: a run whose run_id
// a batch before would have copied for another session is a conflict
// (BadRunIDConflict), not a run to copy. Without it, whether a dry run
// found a run_id shared by two sessions depended on their landing in one
// batch. It keeps 8 bytes and a shared session id per run.
func (m *Manager) dryClaim(p *partition) {
	if m.dryTaken == nil {
		m.dryTaken, m.drySeed = map[uint64]string{}, maphash.MakeSeed()
	}
	kept := p.missing[:0]
	for _, r := range p.missing {
		h := maphash.String(m.drySeed, r.RunID)
		if owner, ok := m.dryTaken[h]; ok && owner != r.SessionID {
			p.conflicts = append(p.conflicts, conflictRow(r, owner))
			continue
		}
		m.dryTaken[h] = r.SessionID
		kept = append(kept, r)
	}
	p.missing = kept
}

// insertMissing copies, in tx, the runs the runs table lacks and the
// changes a 2.x process made to copied runs where the row was not written
// since (see partition), and records what it copied in the copied-runs
// table.
func (m *Manager) insertMissing(ctx context.Context, tx *sql.Tx, runs []db.Run) (batchCopy, error) {
	var out batchCopy
	runs, err := m.keepLiveSessions(ctx, tx, runs)
	if err != nil {
		return out, err
	}
	p, err := m.partitionCopied(ctx, tx, fullLedger, runs)
	if err != nil {
		return out, err
	}
	if out.inserted, err = m.insertRuns(ctx, tx, p.missing); err != nil {
		return out, err
	}
	var taken []BadRow
	if m.needsConfirm(len(p.missing), out.inserted) {
		if out.inserted, taken, err = m.confirmInserted(ctx, tx, p.missing); err != nil {
			return out, err
		}
	}
	recs := insertedRecords(p.missing, taken)
	n, more, changed, err := m.recopyRuns(ctx, tx, p.recopy)
	if err != nil {
		return out, err
	}
	out.recopied = n
	recs = withClaims(p.claims, append(append(recs, more...), p.restamp...))
	if err := m.saveRecords(ctx, tx, recs); err != nil {
		return out, err
	}
	out.conflicts = append(append(p.conflicts, taken...), changed...)
	return out, nil
}

// keepLiveSessions leaves out the runs of sessions deleted since the batch
// was read (a 2.x process still running): the runs table's foreign key
// refuses them, which failed the whole batch, and the deletion would have
// taken them with the session anyway.
func (m *Manager) keepLiveSessions(ctx context.Context, tx *sql.Tx, runs []db.Run) ([]db.Run, error) {
	var ids []any
	seen := map[string]bool{}
	for _, r := range runs {
		if !seen[r.SessionID] {
			seen[r.SessionID] = true
			ids = append(ids, r.SessionID)
		}
	}
	live := make(map[string]bool, len(ids))
	for chunk := range slices.Chunk(ids, lookupChunk) {
		q := "SELECT session_id FROM " + m.qualify(m.tables.Sessions) + " WHERE session_id IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(chunk)), ", ") + ")"
		got, err := m.stringColumnQ(ctx, tx, q, chunk...)
		if err != nil {
			return nil, fmt.Errorf("migrate: look up the batch's sessions: %w", err)
		}
		for _, id := range got {
			live[id] = true
		}
	}
	if len(live) == len(ids) {
		return runs, nil
	}
	return slices.DeleteFunc(slices.Clone(runs), func(r db.Run) bool { return !live[r.SessionID] }), nil
}

// writeBatch copies the runs of one batch (insertMissing), records its bad
// rows (conflicts among them) and moves the checkpoint, all in one
// transaction.
func (m *Manager) writeBatch(ctx context.Context, w *sql.Conn, cb convertedBatch, step string, done, copied int64) (batchCopy, error) {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return batchCopy{}, fmt.Errorf("migrate: begin copy batch: %w", err)
	}
	defer tx.Rollback()
	if m.tuneCopy != nil {
		if err := m.tuneCopy(ctx, tx); err != nil {
			return batchCopy{}, err
		}
	}
	bc, err := m.insertMissing(ctx, tx, cb.rows)
	if err != nil {
		return batchCopy{}, err
	}
	if err := m.clearRecorded(ctx, tx, cb.clear); err != nil {
		return batchCopy{}, err
	}
	if err := m.recordBad(ctx, tx, append(cb.bad, bc.conflicts...)); err != nil {
		return batchCopy{}, err
	}
	if err := m.saveCheckpoint(ctx, tx, step, cb.last, done, copied+bc.inserted); err != nil {
		return batchCopy{}, err
	}
	if err := tx.Commit(); err != nil {
		return batchCopy{}, fmt.Errorf("migrate: commit copy batch: %w", err)
	}
	return bc, nil
}

func (m *Manager) countLegacySessions(ctx context.Context) (int64, error) {
	var n int64
	q := fmt.Sprintf("SELECT count(*) FROM %s WHERE %s IS NOT NULL", m.qualify(m.tables.Sessions), m.quote("runs"))
	if err := m.cfg.DB.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, fmt.Errorf("migrate: count sessions with runs: %w", err)
	}
	return n, nil
}

// legacyReader reads the legacy column in batches, keyset on session_id:
// sessions whose runs column is not SQL NULL, after a session id and, with
// until, up to one. A batch ends at BatchSize sessions or once it holds
// BatchBytes of JSON (one session more than that at most), so memory follows
// the batch, not the database.
//
// Each read's LIMIT follows the sessions' size seen so far: a read that
// stopped on BatchBytes before its last row would leave the server sending
// (and the driver reading and discarding on Close) every remaining row, up
// to BatchSize sessions of JSON per batch for a few used.
type legacyReader struct {
	m       *Manager
	q       queryer
	last    string
	hasLast bool
	until   *string
	limit   int
}

// newLegacyReader starts a reader after session id last (when hasLast).
func (m *Manager) newLegacyReader(q queryer, last string, hasLast bool, until *string) *legacyReader {
	// The first LIMIT is a guess (64 sessions of 64 KiB fill 4 MiB); the
	// ones after follow the sizes read.
	return &legacyReader{m: m, q: q, last: last, hasLast: hasLast, until: until, limit: min(m.cfg.BatchSize, 64)}
}

// next returns the next batch; an empty one at the end.
func (r *legacyReader) next(ctx context.Context) ([]legacyRow, error) {
	batch, size, err := r.m.readLegacyBatchUntil(ctx, r.q, r.last, r.hasLast, r.until, r.limit)
	if err != nil || len(batch) == 0 {
		return nil, err
	}
	avg := max(size/len(batch), 1)
	r.limit = max(1, min(r.m.cfg.BatchSize, r.m.cfg.BatchBytes/avg))
	r.last, r.hasLast = batch[len(batch)-1].s.SessionID, true
	return batch, nil
}

// readLegacyBatchUntil reads the next sessions (keyset on session_id, at most
// limit) whose runs column is not SQL NULL, stopping after session id *until
// when until is not nil, and once the batch holds BatchBytes of JSON; size is
// the JSON it holds.
func (m *Manager) readLegacyBatchUntil(ctx context.Context, q queryer, after string, hasAfter bool, until *string, limit int) ([]legacyRow, int, error) {
	runs := m.quote("runs")
	if m.sd.Migration.BinaryJSON != nil {
		runs = m.jsonText(runs)
	}
	where := m.quote("runs") + " IS NOT NULL"
	args := []any{}
	if hasAfter {
		where += " AND session_id > ?"
		args = append(args, after)
	}
	if until != nil {
		where += " AND session_id <= ?"
		args = append(args, *until)
	}
	query := fmt.Sprintf("SELECT session_id, user_id, created_at, %s FROM %s WHERE %s ORDER BY session_id LIMIT %d",
		runs, m.qualify(m.tables.Sessions), where, limit)
	rs, err := q.QueryContext(ctx, m.q(query), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("migrate: read sessions after %q: %w", after, err)
	}
	defer rs.Close()
	var out []legacyRow
	size := 0
	for rs.Next() {
		var r legacyRow
		var user sql.NullString
		var created sessionSeconds
		if err := rs.Scan(&r.s.SessionID, &user, &created, &r.runs); err != nil {
			return nil, 0, fmt.Errorf("migrate: scan session: %w", err)
		}
		r.s.UserID, r.s.CreatedAt = user.String, int64(created)
		out = append(out, r)
		if size += len(r.runs); size >= m.cfg.BatchBytes {
			break
		}
	}
	return out, size, rs.Err()
}

// convertBatch turns legacy rows into run rows and bad-row records.
func (m *Manager) convertBatch(batch []legacyRow, trusted bool) ([]db.Run, []BadRow) {
	var rows []db.Run
	var bad []BadRow
	for _, lr := range batch {
		elems, kind, err := decodeLegacyRuns(lr.runs, trusted)
		if kind != "" {
			bad = append(bad, BadRow{SessionID: lr.s.SessionID, Position: -1, Kind: kind, Detail: err.Error()})
			continue
		}
		seen := make(map[string]int, len(elems))
		for i, e := range elems {
			r, kind, err := elementToRun(lr.s, i, e)
			if kind != "" {
				bad = append(bad, BadRow{SessionID: lr.s.SessionID, Position: i, Kind: kind, Detail: err.Error()})
				continue
			}
			if m.sd.Migration.BinaryJSON != nil && hasNULEscape(r.RunData) {
				// One such run would fail its whole batch; it stays in the
				// legacy column.
				bad = append(bad, BadRow{SessionID: lr.s.SessionID, Position: i, Kind: BadNUL,
					Detail: "run " + r.RunID + " holds U+0000 (\\u0000), which " + m.sd.Name + "'s binary JSON cannot store; it stays in the legacy runs column"})
				continue
			}
			if (m.sd.Migration.BinaryJSON != nil || m.sd.Migration.TypedJSON) && hasUnpairedSurrogate(r.RunData) {
				// Postgres' json column holds it, and every legacy column
				// holding the run as a JSON string; jsonb and MariaDB's
				// json (its JSON_VALID check) refuse it, and with it the
				// whole batch, so every Up failed on it.
				bad = append(bad, BadRow{SessionID: lr.s.SessionID, Position: i, Kind: BadSurrogate,
					Detail: "run " + r.RunID + " holds an unpaired UTF-16 surrogate escape (such as \\ud83d alone), which " + m.sd.Name + "'s JSON column cannot store; it stays in the legacy runs column"})
				continue
			}
			if first, dup := seen[r.RunID]; dup {
				bad = append(bad, BadRow{SessionID: lr.s.SessionID, Position: i, Kind: BadDuplicate,
					Detail: fmt.Sprintf("run_id %s already at position %d (first occurrence kept)", r.RunID, first)})
				continue
			}
			seen[r.RunID] = i
			rows = append(rows, r)
		}
	}
	return rows, bad
}

// insertRuns writes rows with multi-row insert-or-ignore statements and
// returns how many were inserted.
func (m *Manager) insertRuns(ctx context.Context, tx *sql.Tx, rows []db.Run) (int64, error) {
	if m.sd.Migration.InsertRuns != nil {
		return m.insertRunsColumns(ctx, tx, rows)
	}
	var total int64
	var full *sql.Stmt
	for len(rows) > 0 {
		n, size := 0, 0
		for n < len(rows) && n < maxRowsPerInsert && (n == 0 || size+len(rows[n].RunData) <= maxBytesPerInsert) {
			size += len(rows[n].RunData)
			n++
		}
		chunk := rows[:n]
		rows = rows[n:]
		args := make([]any, 0, n*len(runColumns))
		for i := range chunk {
			r := &chunk[i]
			args = append(args, r.RunID, r.SessionID, string(r.RunType), nullable(r.AgentID), nullable(r.TeamID),
				nullable(r.WorkflowID), nullable(r.UserID), nullable(r.ParentRunID), nullable(string(r.Status)),
				*r.RunIndex, string(r.RunData), r.CreatedAt, r.UpdatedAt)
		}
		var res sql.Result
		var err error
		if n == maxRowsPerInsert {
			// Full chunks share one prepared statement per batch.
			if full == nil {
				if full, err = tx.PrepareContext(ctx, m.insertRunsSQL(n)); err != nil {
					return total, fmt.Errorf("migrate: prepare runs insert: %w", err)
				}
				defer full.Close()
			}
			res, err = full.ExecContext(ctx, args...)
		} else {
			res, err = tx.ExecContext(ctx, m.insertRunsSQL(n), args...)
		}
		if err != nil {
			return total, fmt.Errorf("migrate: insert %d runs into %s: %w", n, m.tables.Runs, err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += k
	}
	return total, nil
}

// insertRunsColumns writes rows with the dialect's InsertRuns: one argument
// per column holding every row's values (Postgres expands them with unnest:
// one small statement per chunk instead of thousands of parameters,
// measurably cheaper for the server to parse and plan).
func (m *Manager) insertRunsColumns(ctx context.Context, tx *sql.Tx, rows []db.Run) (int64, error) {
	q := m.sd.Migration.InsertRuns(m.qualify(m.tables.Runs), m.quoteList(runColumns))
	var total int64
	for len(rows) > 0 {
		n, size := 0, 0
		for n < len(rows) && n < 2*maxRowsPerInsert && (n == 0 || size+len(rows[n].RunData) <= maxBytesPerInsert) {
			size += len(rows[n].RunData)
			n++
		}
		var ids, sids, types, agents, teams, wfs, users, parents, statuses, data []string
		var idx, created, updated []int64
		for i := range rows[:n] {
			r := &rows[i]
			ids, sids, types = append(ids, r.RunID), append(sids, r.SessionID), append(types, string(r.RunType))
			agents, teams, wfs = append(agents, r.AgentID), append(teams, r.TeamID), append(wfs, r.WorkflowID)
			users, parents, statuses = append(users, r.UserID), append(parents, r.ParentRunID), append(statuses, string(r.Status))
			idx, data = append(idx, *r.RunIndex), append(data, string(r.RunData))
			created, updated = append(created, r.CreatedAt), append(updated, r.UpdatedAt)
		}
		res, err := tx.ExecContext(ctx, q, ids, sids, types, agents, teams, wfs, users, parents, statuses, idx, data, created, updated)
		if err != nil {
			return total, fmt.Errorf("migrate: insert %d runs into %s: %w", n, m.tables.Runs, err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += k
		rows = rows[n:]
	}
	return total, nil
}

func (m *Manager) insertRunsSQL(n int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(runColumns)), ", ") + ")"
	values := strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
	return m.q(m.sd.InsertIgnoreRows(m.qualify(m.tables.Runs), m.quoteList(runColumns), values, "run_id", "run_id"))
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// recordBad writes bad rows to the errors table, once per (session, position).
func (m *Manager) recordBad(ctx context.Context, tx *sql.Tx, bad []BadRow) error {
	if len(bad) == 0 {
		return nil
	}
	now := time.Now().Unix()
	for len(bad) > 0 {
		n := min(len(bad), 200)
		values := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?), ", n), ", ")
		args := make([]any, 0, n*6)
		for _, b := range bad[:n] {
			args = append(args, m.tables.Sessions, b.SessionID, b.Position, b.Kind, b.Detail, now)
		}
		q := m.sd.InsertIgnoreRows(m.qualify(m.tables.Errors), "table_name, session_id, position, kind, detail, created_at", values,
			"table_name, session_id, position", "table_name")
		if _, err := tx.ExecContext(ctx, m.q(q), args...); err != nil {
			return fmt.Errorf("migrate: record bad rows in %s: %w", m.tables.Errors, err)
		}
		bad = bad[n:]
	}
	return nil
}

func (m *Manager) loadCheckpoint(ctx context.Context, step string) (last string, done, copied int64, err error) {
	q := "SELECT last_session_id, sessions_done, runs_copied FROM " + m.qualify(m.tables.Progress) + " WHERE table_name = ? AND step = ?"
	err = m.cfg.DB.QueryRowContext(ctx, m.q(q), m.tables.Sessions, step).Scan(&last, &done, &copied)
	if err == sql.ErrNoRows || m.cfg.DryRun && err != nil {
		return "", 0, 0, nil
	}
	if err != nil {
		return "", 0, 0, fmt.Errorf("migrate: read copy checkpoint: %w", err)
	}
	return last, done, copied, nil
}

func (m *Manager) saveCheckpoint(ctx context.Context, tx *sql.Tx, step, last string, done, copied int64) error {
	q := m.sd.UpsertRow(m.qualify(m.tables.Progress),
		[]string{"table_name", "step", "last_session_id", "sessions_done", "runs_copied", "updated_at"}, []string{"table_name"},
		[]string{"step", "last_session_id", "sessions_done", "runs_copied", "updated_at"})
	if _, err := tx.ExecContext(ctx, m.q(q), m.tables.Sessions, step, last, done, copied, time.Now().Unix()); err != nil {
		return fmt.Errorf("migrate: save copy checkpoint: %w", err)
	}
	return nil
}

func (m *Manager) clearCheckpoint(ctx context.Context, q queryer) error {
	_, err := q.ExecContext(ctx, m.q("DELETE FROM "+m.qualify(m.tables.Progress)+" WHERE table_name = ?"), m.tables.Sessions)
	return err
}

// legacyTrusted reports whether the legacy column's type guarantees valid JSON
// (Postgres json/jsonb, MySQL json), so the copy need not validate it again.
func (m *Manager) legacyTrusted(ctx context.Context) (bool, error) {
	cols, err := m.cat.columns(ctx, m.cfg.DB, m.tables.Sessions)
	if err != nil {
		return false, err
	}
	t := cols["runs"]
	return m.sd.Migration.TypedJSON && (t == "json" || t == "jsonb"), nil
}

// writerConn returns the connection the copy writes on, tuned by the
// dialect's CopyWriter (SQLite raises its page cache and, in WAL mode, stops
// commits waiting for fsync); restore puts the old settings back.
func (m *Manager) writerConn(ctx context.Context) (*sql.Conn, func(), error) {
	w, err := m.cfg.DB.Conn(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("migrate: connect the copy writer: %w", err)
	}
	if m.sd.Migration.CopyWriter == nil {
		return w, func() { w.Close() }, nil
	}
	restore, err := m.sd.Migration.CopyWriter(ctx, w)
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	return w, func() {
		restore()
		w.Close()
	}, nil
}
