package migrate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// A 2.x process still running after Up may also change a run it already
// wrote (a paused run it continues): same run_id, new content in the legacy
// column. The copy records, per run it writes, a digest of the legacy
// element and the updated_at it gave the row (Tables.CopiedRuns). A later
// pass then tells apart, for a legacy element that differs from its row:
//   - the element changed since the copy (its digest differs) and the row
//     did not (its updated_at is the recorded one, Agentry sets it to now on
//     every write, and its run_data the one copied: the record's row digest,
//     since a write within the second the copy stamped the row keeps
//     updated_at): the copy rewrites the row, conditionally on both as read,
//     so a write landing in between is never overwritten;
//   - the element did not change (the digest is the recorded one): Agentry
//     changed the row; its version is newer and stays;
//   - both changed: neither can win silently, so the run is a bad row of kind
//     BadRunEditedBothSides and cleanup refuses to drop it.
//
// A run the record names but the runs table lacks was deleted after the
// copy (through Agentry's API): it stays deleted while its element is the
// one copied, and is a BadRunEditedBothSides conflict once a 2.x process
// changed it. The records describe rows of the runs table: they go when
// Down drops it, and a copy into a runs table it creates starts without.
//
// Runs copied before the record existed have none: their row counts as
// unchanged when its updated_at is not after the element's (created_at when
// the element has no updated_at, as the copy set it), and a legacy element
// that differs from a changed row is a conflict (which side changed is
// unknown).

// BadRunEditedBothSides is the bad-row kind of a legacy run that a 2.x
// process changed after the copy while the runs table's row changed too
// (Agentry wrote it, or deleted it): the copy does not pick one. Remove
// the element from the legacy column to keep the runs table's version, or
// delete the row (for a deleted run: its copied-runs record) to have the
// next Up copy the legacy one.
const BadRunEditedBothSides = "run_edited_both_sides"

// runState is what the runs table and the copy's record hold for a run_id.
type runState struct {
	// gone: the runs table lacks the run but the copy recorded writing it:
	// it was deleted after the copy (the other fields but the record's are
	// zero).
	gone    bool
	session string
	updated int64 // the row's updated_at
	// recorded: the copy recorded the element it wrote (digest) and the
	// row's updated_at then (recUpdated).
	recorded   bool
	digest     int64
	recUpdated int64
	// rowDigest, when hasRowDigest, is the contentDigest of the run_data
	// the copy gave the row (records of earlier releases have none).
	hasRowDigest bool
	rowDigest    int64
	// unscoped: the record is one an earlier release wrote, keyed by
	// run_id alone (runs_table ''); the copy rewrites it as this runs
	// table's.
	unscoped bool
}

// partition is where converted legacy runs stand against the runs table.
type partition struct {
	missing []db.Run // the table lacks them: insert
	// recopy: changed in the legacy column since the copy, row untouched
	// since: rewrite the row.
	recopy []recopy
	// restamp: new legacy bytes with the row's content (re-encoded, or
	// both sides made the same change): only the record is rewritten.
	restamp   []copiedRecord
	conflicts []BadRow
	// changed counts legacy runs changed since their copy whose change the
	// row lacks (recopy and BadRunEditedBothSides conflicts).
	changed int64
	// deleted counts runs deleted from the runs table after their copy
	// whose legacy element did not change since: they stay deleted.
	deleted int64
	// claims are the unscoped records the partition relied on, to be
	// written again as this runs table's.
	claims []copiedRecord
}

type recopy struct {
	run    db.Run
	expect int64 // the row's updated_at when read
	// expectData is the row's run_data as read (the dialect's JSON text):
	// the rewrite requires it unchanged too, since a write in the same
	// second leaves updated_at as it was.
	expectData []byte
}

// copiedRecord is one row of Tables.CopiedRuns.
type copiedRecord struct {
	runID   string
	digest  int64
	updated int64
	// rowDigest is the contentDigest of the run_data the row holds
	// (unknown, NULL, when noRowDigest: a claimed record of an earlier
	// release).
	rowDigest   int64
	noRowDigest bool
}

// digestOf identifies a legacy element's bytes as the reader returns them
// (stable while the element is unchanged: Postgres and MySQL render their
// binary JSON the same way every time, SQLite and MariaDB return the text
// stored).
func digestOf(b []byte) int64 {
	s := sha256.Sum256(b)
	return int64(binary.BigEndian.Uint64(s[:8]))
}

// recordsExist reports whether the copied-runs table exists (a database
// migrated before it, read in a dry run, status or cleanup, lacks it).
func (m *Manager) recordsExist(ctx context.Context) (bool, error) {
	return m.cat.tableExists(ctx, m.cfg.DB, m.tables.CopiedRuns)
}

// ledger is what the copied-runs table can tell about a run.
type ledger struct {
	exists bool // the table exists
	// rowDigest: it has the row_digest column (Up adds it; a dry run,
	// status or cleanup may read a table an earlier release made).
	rowDigest bool
	// scoped: it has the runs_table column (Up and Down add it); records
	// of a table without it are all unscoped.
	scoped bool
}

// fullLedger is the copied-runs table as Up's bookkeeping leaves it.
var fullLedger = ledger{exists: true, rowDigest: true, scoped: true}

// readLedger reports whether the copied-runs table exists and has
// row_digest.
func (m *Manager) readLedger(ctx context.Context) (ledger, error) {
	ok, err := m.recordsExist(ctx)
	if err != nil || !ok {
		return ledger{}, err
	}
	cols, err := m.cat.columns(ctx, m.cfg.DB, m.tables.CopiedRuns)
	if err != nil {
		return ledger{}, err
	}
	_, has := cols["row_digest"]
	_, scoped := cols["runs_table"]
	return ledger{exists: true, rowDigest: has, scoped: scoped}, nil
}

// partitionCopied splits converted legacy runs against the runs table (see
// partition). A nil q stands for a runs table that does not exist yet (a dry
// run of the first copy); records says what the copied-runs table holds. A run
// whose run_id the table, or an earlier run of the same list, holds for
// another session is a BadRunIDConflict. Rows are read one look-up chunk at
// a time, so memory follows the chunk.
func (m *Manager) partitionCopied(ctx context.Context, q queryer, records ledger, rows []db.Run) (partition, error) {
	var p partition
	listed := make(map[string]string, len(rows)) // run_id → session, runs of this list the table lacks
	for chunk := range slices.Chunk(rows, lookupChunk) {
		states, err := m.runStates(ctx, q, records, chunk)
		if err != nil {
			return p, err
		}
		var cands []db.Run
		for _, r := range chunk {
			s, ok := states[r.RunID]
			if ok && s.unscoped {
				p.claims = append(p.claims, copiedRecord{runID: r.RunID, digest: s.digest, updated: s.recUpdated, rowDigest: s.rowDigest, noRowDigest: !s.hasRowDigest})
			}
			if ok && s.gone {
				p.deletedAfterCopy(r, s)
				continue
			}
			if !ok {
				if owner, dup := listed[r.RunID]; dup {
					p.conflicts = append(p.conflicts, conflictRow(r, owner))
					continue
				}
				listed[r.RunID] = r.SessionID
				p.missing = append(p.missing, r)
				continue
			}
			switch {
			case s.session != r.SessionID:
				p.conflicts = append(p.conflicts, conflictRow(r, s.session))
			case !s.recorded || s.digest != digestOf(r.RunData):
				cands = append(cands, r)
			}
		}
		if len(cands) == 0 {
			continue
		}
		data, err := m.runData(ctx, q, cands)
		if err != nil {
			return p, err
		}
		for _, r := range cands {
			s := states[r.RunID]
			row, ok := data[r.RunID]
			if !ok { // deleted since the first read
				if s.recorded {
					p.deletedAfterCopy(r, s)
				} else {
					p.missing = append(p.missing, r)
				}
				continue
			}
			if sameJSON(r.RunData, row) {
				p.restamp = append(p.restamp, copiedRecord{runID: r.RunID, digest: digestOf(r.RunData), updated: s.updated, rowDigest: contentDigest(row)})
				continue
			}
			p.changed++
			if s.untouched(r, row) {
				p.recopy = append(p.recopy, recopy{run: r, expect: s.updated, expectData: row})
				continue
			}
			p.conflicts = append(p.conflicts, editedBothSides(r, s.recorded))
		}
	}
	return p, nil
}

// untouched reports whether the row (its run_data as read: row) is the one
// the copy wrote. Agentry sets updated_at to the current second on every
// write, and the copy gives the row the element's timestamp, so a write in
// the second the element names leaves updated_at as recorded: the content
// must be the one copied too (records of earlier releases lack its digest
// and are judged by updated_at alone). Without a record, the row counts as
// untouched when not written after the element's timestamp.
func (s runState) untouched(r db.Run, row []byte) bool {
	if !s.recorded {
		return s.updated <= r.UpdatedAt
	}
	if s.updated != s.recUpdated {
		return false
	}
	return !s.hasRowDigest || contentDigest(row) == s.rowDigest
}

// deletedAfterCopy sorts a legacy run the copy recorded writing but the runs
// table lacks: someone deleted it after the copy (Agentry's API), so it is
// not copied back, unless its legacy element changed since the copy: a 2.x
// process wrote it again, and neither the deletion nor the change wins
// silently (BadRunEditedBothSides). A run with no record (copied before the
// copy kept records, or never copied) is copied.
func (p *partition) deletedAfterCopy(r db.Run, s runState) {
	if s.digest == digestOf(r.RunData) {
		p.deleted++
		return
	}
	p.changed++
	p.conflicts = append(p.conflicts, BadRow{SessionID: r.SessionID, Position: int(*r.RunIndex), Kind: BadRunEditedBothSides,
		Detail: "run " + r.RunID + ": it was deleted from the runs table after the copy, and a 2.x process changed it in the legacy runs column since. " +
			"Neither is applied silently: remove the element from the legacy column to keep it deleted, or delete its row from the copied-runs table (agno_migration_copied_runs) to have the next Up copy it"})
}

func editedBothSides(r db.Run, recorded bool) BadRow {
	why := "a 2.x process changed it in the legacy runs column after the copy, and the runs table's row was written since (by Agentry)"
	if !recorded {
		why = "it differs from the runs table's row, which was written after the copy (by Agentry); this copy kept no record of what it copied, so which side changed is unknown"
	}
	return BadRow{SessionID: r.SessionID, Position: int(*r.RunIndex), Kind: BadRunEditedBothSides,
		Detail: "run " + r.RunID + ": " + why + ". Neither version is dropped: remove the element from the legacy column to keep the runs table's, or delete the row to copy the legacy one"}
}

// runStates reads the runs table's session_id and updated_at, and the
// copy's record, of the given runs, keyed by run_id (compared exactly: a
// key the column's collation matched for another spelling is ignored).
func (m *Manager) runStates(ctx context.Context, q queryer, records ledger, rows []db.Run) (map[string]runState, error) {
	out := make(map[string]runState, len(rows))
	if q == nil {
		return out, nil
	}
	ids := make([]any, len(rows))
	want := make(map[string]bool, len(rows))
	for i := range rows {
		ids[i] = rows[i].RunID
		want[rows[i].RunID] = true
	}
	in := " WHERE run_id IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
	err := m.eachRow(ctx, q, "SELECT run_id, session_id, updated_at FROM "+m.qualify(m.tables.Runs)+in, ids, func(rs *sql.Rows) error {
		var id, sid string
		var upd sql.NullInt64
		if err := rs.Scan(&id, &sid, &upd); err != nil {
			return err
		}
		if want[id] {
			out[id] = runState{session: sid, updated: upd.Int64}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: look up copied runs: %w", err)
	}
	if !records.exists {
		return out, nil
	}
	cols := "run_id, digest, updated_at, NULL"
	if records.rowDigest {
		cols = "run_id, digest, updated_at, row_digest"
	}
	// This runs table's records, and those an earlier release wrote
	// unscoped (all of a table without runs_table), which count where
	// this table has none.
	where, args := in, ids
	if records.scoped {
		cols += ", runs_table"
		where = in + " AND runs_table IN (?, '')"
		args = append(slices.Clone(ids), m.tables.Runs)
	} else {
		cols += ", ''"
	}
	present := make(map[string]bool, len(out))
	for id := range out {
		present[id] = true
	}
	err = m.eachRow(ctx, q, "SELECT "+cols+" FROM "+m.qualify(m.tables.CopiedRuns)+where, args, func(rs *sql.Rows) error {
		var id, owner string
		var d, u int64
		var rd sql.NullInt64
		if err := rs.Scan(&id, &d, &u, &rd, &owner); err != nil {
			return err
		}
		if !want[id] {
			return nil // another spelling the column's collation matched
		}
		s := out[id]
		if s.recorded && !s.unscoped {
			return nil // this table's own record wins
		}
		s.gone = !present[id]
		s.recorded, s.digest, s.recUpdated = true, d, u
		s.hasRowDigest, s.rowDigest = rd.Valid, rd.Int64
		s.unscoped = owner == ""
		out[id] = s
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: read copy records: %w", err)
	}
	return out, nil
}

// runData reads the run_data of the given runs, keyed by run_id.
func (m *Manager) runData(ctx context.Context, q queryer, rows []db.Run) (map[string][]byte, error) {
	ids := make([]any, len(rows))
	for i := range rows {
		ids[i] = rows[i].RunID
	}
	out := make(map[string][]byte, len(rows))
	query := "SELECT run_id, " + m.jsonText("run_data") + " FROM " + m.qualify(m.tables.Runs) +
		" WHERE run_id IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
	err := m.eachRow(ctx, q, query, ids, func(rs *sql.Rows) error {
		var id string
		var data []byte
		if err := rs.Scan(&id, &data); err != nil {
			return err
		}
		out[id] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: read copied runs: %w", err)
	}
	return out, nil
}

func (m *Manager) eachRow(ctx context.Context, q queryer, query string, args []any, fn func(*sql.Rows) error) error {
	rs, err := q.QueryContext(ctx, m.q(query), args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		if err := fn(rs); err != nil {
			return err
		}
	}
	return rs.Err()
}

// sameJSON reports whether two JSON texts hold the same value: the bytes
// first, then decoded (Postgres JSONB and MySQL JSON reorder keys, change
// spacing and rewrite numbers: 1.0E2 and 100 are one number). Text that
// does not decode is the same only byte for byte.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if ua, _, err := unwrapLayers(a); err == nil {
		a = ua
	}
	if ub, _, err := unwrapLayers(b); err == nil {
		b = ub
	}
	if bytes.Equal(a, b) {
		return true
	}
	va, ok := decodeNumbers(a)
	if !ok {
		return false
	}
	vb, ok := decodeNumbers(b)
	return ok && equalJSON(va, vb)
}

func decodeNumbers(b []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// equalJSON compares decoded values, numbers by value (exactly, at any
// exponent: canonicalNumber).
func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		return x == y || canonicalNumber(string(x)) == canonicalNumber(string(y))
	default: // string, bool, nil
		return a == b
	}
}

// recopyRuns rewrites rows whose legacy element changed since the copy, each
// only if its updated_at and run_data are still the ones read (a write in
// between wins, even in the same second: the run becomes a
// BadRunEditedBothSides conflict). It returns how many it rewrote, their
// records, and the conflicts.
func (m *Manager) recopyRuns(ctx context.Context, tx *sql.Tx, runs []recopy) (int64, []copiedRecord, []BadRow, error) {
	if len(runs) == 0 {
		return 0, nil, nil, nil
	}
	stmt, err := tx.PrepareContext(ctx, m.q("UPDATE "+m.qualify(m.tables.Runs)+" SET run_type = ?, agent_id = ?, team_id = ?, workflow_id = ?, user_id = ?, "+
		"parent_run_id = ?, status = ?, run_index = ?, run_data = ?, created_at = ?, updated_at = ? WHERE run_id = ? AND session_id = ? AND updated_at = ? AND "+
		m.sd.EqExact(m.jsonText("run_data"))))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("migrate: prepare run re-copy: %w", err)
	}
	defer stmt.Close()
	var n int64
	var recs []copiedRecord
	var conflicts []BadRow
	for _, rc := range runs {
		r := &rc.run
		res, err := stmt.ExecContext(ctx, string(r.RunType), nullable(r.AgentID), nullable(r.TeamID), nullable(r.WorkflowID), nullable(r.UserID),
			nullable(r.ParentRunID), nullable(string(r.Status)), *r.RunIndex, string(r.RunData), r.CreatedAt, r.UpdatedAt,
			r.RunID, r.SessionID, rc.expect, string(rc.expectData))
		if err != nil {
			return 0, nil, nil, fmt.Errorf("migrate: re-copy run %s: %w", r.RunID, err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return 0, nil, nil, err
		}
		if k == 0 {
			conflicts = append(conflicts, editedBothSides(*r, true))
			continue
		}
		n++
		recs = append(recs, recordOf(*r))
	}
	return n, recs, conflicts, nil
}

// saveRecords writes copy records of this runs table, replacing those of
// the same run_id, and deletes the unscoped records of an earlier release
// for those runs (claimed: the record is this table's now).
func (m *Manager) saveRecords(ctx context.Context, tx *sql.Tx, recs []copiedRecord) error {
	for chunk := range slices.Chunk(recs, 300) {
		values := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?), ", len(chunk)), ", ")
		q := "INSERT INTO " + m.qualify(m.tables.CopiedRuns) + " (runs_table, run_id, digest, updated_at, row_digest) VALUES " + values
		if m.sd.Upsert == sqlstore.OnDuplicateKey {
			q += " ON DUPLICATE KEY UPDATE digest = VALUES(digest), updated_at = VALUES(updated_at), row_digest = VALUES(row_digest)"
		} else {
			q += " ON CONFLICT (runs_table, run_id) DO UPDATE SET digest = excluded.digest, updated_at = excluded.updated_at, row_digest = excluded.row_digest"
		}
		args := make([]any, 0, 5*len(chunk))
		ids := make([]any, 0, len(chunk))
		for _, r := range chunk {
			var rd any = r.rowDigest
			if r.noRowDigest {
				rd = nil
			}
			args = append(args, m.tables.Runs, r.runID, r.digest, r.updated, rd)
			ids = append(ids, r.runID)
		}
		if _, err := tx.ExecContext(ctx, m.q(q), args...); err != nil {
			return fmt.Errorf("migrate: record copied runs in %s: %w", m.tables.CopiedRuns, err)
		}
		if !m.unscopedRecords {
			continue
		}
		del := "DELETE FROM " + m.qualify(m.tables.CopiedRuns) + " WHERE runs_table = '' AND run_id IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
		if _, err := tx.ExecContext(ctx, m.q(del), ids...); err != nil {
			return fmt.Errorf("migrate: claim copy records in %s: %w", m.tables.CopiedRuns, err)
		}
	}
	return nil
}

// withClaims adds to recs the claimed records of runs recs does not write.
func withClaims(claims, recs []copiedRecord) []copiedRecord {
	if len(claims) == 0 {
		return recs
	}
	written := make(map[string]bool, len(recs))
	for _, r := range recs {
		written[r.runID] = true
	}
	for _, c := range claims {
		if !written[c.runID] {
			written[c.runID] = true
			recs = append(recs, c)
		}
	}
	return recs
}

// insertedRecords returns the records of the runs of missing an insert
// wrote (all but those confirmInserted found taken).
func insertedRecords(missing []db.Run, conflicts []BadRow) []copiedRecord {
	type at struct {
		session string
		pos     int
	}
	taken := make(map[at]bool, len(conflicts))
	for _, c := range conflicts {
		taken[at{c.SessionID, c.Position}] = true
	}
	recs := make([]copiedRecord, 0, len(missing))
	for _, r := range missing {
		if taken[at{r.SessionID, int(*r.RunIndex)}] {
			continue
		}
		recs = append(recs, recordOf(r))
	}
	return recs
}

// recordOf is the record of a row the copy wrote from r.
func recordOf(r db.Run) copiedRecord {
	return copiedRecord{runID: r.RunID, digest: digestOf(r.RunData), updated: r.UpdatedAt, rowDigest: contentDigest(r.RunData)}
}

// clearRecords deletes the copy records of this runs table (it is
// dropped, or is about to be created), if their table exists, and those of
// an earlier release (unscoped: an empty runs_table, or every record of a table
// without the column) that it can prove are this table's: the records of
// runs its sessions table's legacy column holds. Kept, those would make
// the next copy take the runs they name for runs deleted since. Other
// unscoped records may be another deployment's, not yet claimed by its
// first Up since the upgrade: they stay (what is left of this table's
// among them names runs deleted after their copy, which Down left out of
// the legacy column; see docs/adr/migrate-clear-provable-records.md).
func (m *Manager) clearRecords(ctx context.Context) error {
	records, err := m.readLedger(ctx)
	if err != nil || !records.exists {
		return err
	}
	del := "DELETE FROM " + m.qualify(m.tables.CopiedRuns)
	unscoped := del + " WHERE run_id IN "
	if records.scoped {
		if _, err := m.cfg.DB.ExecContext(ctx, m.q(del+" WHERE runs_table = ?"), m.tables.Runs); err != nil {
			return fmt.Errorf("migrate: clear copy records in %s: %w", m.tables.CopiedRuns, err)
		}
		unscoped = del + " WHERE runs_table = '' AND run_id IN "
		var n int
		q := "SELECT count(*) FROM (SELECT 1 AS one FROM " + m.qualify(m.tables.CopiedRuns) + " WHERE runs_table = '' LIMIT 1) u"
		if err := m.cfg.DB.QueryRowContext(ctx, q).Scan(&n); err != nil || n == 0 {
			return err
		}
	}
	cols, err := m.cat.columns(ctx, m.cfg.DB, m.tables.Sessions)
	if err != nil {
		return err
	}
	if _, ok := cols["runs"]; !ok {
		return nil // no legacy column: no run of it to prove a record by
	}
	r := m.newLegacyReader(m.cfg.DB, "", false, nil)
	for {
		batch, err := r.next(ctx)
		if err != nil || len(batch) == 0 {
			return err
		}
		var ids []any
		for _, lr := range batch {
			elems, _, _ := decodeLegacyRuns(lr.runs, false) // an unreadable value proves nothing
			for _, e := range elems {
				if id := str(readHead(e).RunID); id != "" {
					ids = append(ids, id)
				}
			}
		}
		for len(ids) > 0 {
			chunk := ids[:min(len(ids), 500)]
			ids = ids[len(chunk):]
			q := unscoped + "(" + strings.TrimSuffix(strings.Repeat("?, ", len(chunk)), ", ") + ")"
			if _, err := m.cfg.DB.ExecContext(ctx, m.q(q), chunk...); err != nil {
				return fmt.Errorf("migrate: clear copy records in %s: %w", m.tables.CopiedRuns, err)
			}
		}
	}
}

// goneRuns maps the run_id of each run the copy recorded writing but the
// runs table no longer holds (deleted after the copy, through Agentry's API)
// to the digest of the legacy element the copy wrote.
type goneRuns map[string]int64

// deleted reports whether r is such a run and its legacy element is still
// the one copied: the deletion is to be honoured.
func (g goneRuns) deleted(r db.Run) bool {
	d, ok := g[r.RunID]
	return ok && d == digestOf(r.RunData)
}

// changedSince reports whether r was deleted after the copy and a 2.x
// process changed its legacy element since.
func (g goneRuns) changedSince(r db.Run) bool {
	d, ok := g[r.RunID]
	return ok && d != digestOf(r.RunData)
}

// goneAfterCopy returns the runs among rows (legacy runs the caller found
// no row for) that the copy recorded writing and the runs table lacks. It
// is empty when the copied-runs table does not exist.
func (m *Manager) goneAfterCopy(ctx context.Context, q queryer, records ledger, rows []db.Run) (goneRuns, error) {
	if len(rows) == 0 || !records.exists {
		return nil, nil
	}
	var g goneRuns
	for chunk := range slices.Chunk(rows, lookupChunk) {
		states, err := m.runStates(ctx, q, records, chunk)
		if err != nil {
			return nil, err
		}
		for id, s := range states {
			if s.gone {
				if g == nil {
					g = goneRuns{}
				}
				g[id] = s.digest
			}
		}
	}
	return g, nil
}

// legacyOnly converts the legacy elements whose run_id table lacks.
func legacyOnly(sessionID string, elems []json.RawMessage, table []db.Run) []db.Run {
	have := make(map[string]bool, len(table))
	for i := range table {
		have[table[i].RunID] = true
	}
	ls := legacySession{SessionID: sessionID}
	var out []db.Run
	for i, e := range elems {
		if r, bad, _ := elementToRun(ls, i, e); bad == "" && !have[r.RunID] {
			out = append(out, r)
		}
	}
	return out
}
