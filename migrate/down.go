package migrate

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// LowestDownTarget is the oldest version Down restores.
const LowestDownTarget = "2.5.0"

// ErrCannotRestore is returned by Down for a target older than
// LowestDownTarget: Down never stamps a version whose shape it did not
// restore.
var ErrCannotRestore = errors.New("migrate: down cannot restore the shape of versions before " + LowestDownTarget +
	" (the 2.3.0 and 2.5.0 steps add memories created_at and feedback, JSONB columns on Postgres and the sessions primary key, which down does not remove); " +
	"the lowest target is " + LowestDownTarget)

// Down moves every table newer than target back to target, one version step
// at a time. 3.0.0 → 2.5.6 rebuilds the sessions table's legacy runs column
// from the runs table (merged with what the column still holds, so nothing is
// lost; see MergeRuns; a run deleted from the runs table after its copy and
// not changed by 2.x since stays deleted), in the dialect's native encoding,
// then drops the runs
// table, unless it holds runs of sessions the sessions table lacks: then it
// keeps it and fails with ErrOrphanRuns, naming them. Evals, knowledge and
// metrics lose user_id. The 2.5.6 step only
// restamps (it changes a table Agentry does not manage). Down to 3.0.0 gives
// the runs table Agno 3.0's declared indexes back. Targets before
// LowestDownTarget fail with ErrCannotRestore before anything changes.
// After a crash, running Down again resumes, also past the drop of the runs
// table (TableStatus.DownInterrupted).
func (m *Manager) Down(ctx context.Context, target string) (*Summary, error) {
	if target == "" {
		return nil, errors.New("migrate: down needs a target version (e.g. 2.5.6)")
	}
	if i := versionIndex(target); i >= 0 && i < versionIndex(LowestDownTarget) {
		return nil, fmt.Errorf("%w: down to %s not started, nothing changed", ErrCannotRestore, target)
	}
	start := time.Now()
	release, sts, err := m.begin(ctx, target, Latest)
	if err != nil {
		return nil, err
	}
	defer release()
	sts = slices.DeleteFunc(sts, func(st TableStatus) bool {
		return !st.Exists || st.Kind == KindToolResults || st.Kind == KindFS || st.Kind == KindRunSteps || st.Kind == KindApprovals ||
			st.Kind == KindSchedules || st.Kind == KindScheduleRuns ||
			st.Kind == KindComponents || st.Kind == KindComponentConfigs || st.Kind == KindComponentLinks // 3.0 tables have no older layout; 2.x code ignores them
	})
	// DDL is not transactional on MySQL, and each table steps on its own:
	// check every step can run before the first one changes anything.
	if err := m.checkDown(ctx, sts, target); err != nil {
		return nil, fmt.Errorf("migrate: down to %s not started, nothing changed: %w", target, err)
	}
	sum := &Summary{DryRun: m.cfg.DryRun, From: map[string]string{}, To: map[string]string{}}
	for _, st := range sts {
		sum.From[st.Table] = st.Current
	}
	for _, st := range sts {
		cur := st.Current
		for i := versionIndex(cur); i > versionIndex(target); i-- {
			to := Versions[i-1]
			step := Step{Table: st.Table, From: cur, To: to}
			if cur == "3.0.0" {
				if step.Actions, err = m.down300(ctx, st, sum); err != nil {
					return sum, m.downStopped(sum, sts, st.Table, cur, target, fmt.Errorf("%s %s → %s: %w", st.Table, cur, to, err))
				}
			}
			if !m.cfg.DryRun {
				if err := m.stamp(ctx, m.cfg.DB, st.Table, to); err != nil {
					return sum, m.downStopped(sum, sts, st.Table, cur, target, err)
				}
			}
			m.log.Info("migrate: step down", "table", st.Table, "from", cur, "to", to, "dry_run", m.cfg.DryRun)
			sum.Steps = append(sum.Steps, step)
			cur = to
		}
		sum.To[st.Table] = cur
	}
	if versionIndex(target) >= versionIndex("3.0.0") {
		actions, err := m.restoreRunsIndexes(ctx)
		if err != nil {
			return sum, fmt.Errorf("migrate: down to %s: %s: %w", target, runsIndexStep, err)
		}
		if len(actions) > 0 {
			sum.Steps = append(sum.Steps, Step{Table: m.tables.Runs, From: Latest, To: target, Actions: actions})
			m.log.Info("migrate: step down: "+runsIndexStep, "table", m.tables.Runs, "actions", actions, "dry_run", m.cfg.DryRun)
		}
	}
	sum.Duration = time.Since(start)
	return sum, nil
}

// checkDown fails when a step of Down cannot run: on SQLite, a table whose
// user_id neither DROP COLUMN nor the dialect's rebuild can remove; on
// Postgres and MySQL, a table whose step's DDL the server refuses (see
// tryDownDDL).
func (m *Manager) checkDown(ctx context.Context, sts []TableStatus, target string) error {
	if versionIndex(target) >= versionIndex("3.0.0") {
		return nil
	}
	cd := m.sd.Migration.ColumnDropper
	if cd == nil {
		return m.tryDownDDL(ctx, sts)
	}
	for _, st := range sts {
		if st.Current != "3.0.0" || !slices.Contains(sqlstore.ColumnsAddedIn(Latest, st.Kind), "user_id") {
			continue
		}
		cols, err := m.cat.columns(ctx, m.cfg.DB, st.Table)
		if err != nil {
			return err
		}
		if _, ok := cols["user_id"]; !ok {
			continue
		}
		if _, err := cd.Plan(ctx, m.cfg.DB, st.Table, "user_id", downDroppedIndexes(st.Table)...); err != nil {
			return err
		}
	}
	return nil
}

// downStopped says precisely where a failed Down left each table: the tables
// it stepped, the one it stopped in, and those it did not reach. Rerunning
// Down resumes; every step checks before it changes. A dry run changed
// nothing: it says where Down would stop, and why.
func (m *Manager) downStopped(sum *Summary, sts []TableStatus, failed, at, target string, err error) error {
	if m.cfg.DryRun {
		sum.To[failed] = at
		return fmt.Errorf("migrate: down to %s would stop in %s's step down (dry run: nothing changed); fix the cause before running down: %w",
			target, failed, err)
	}
	var parts []string
	for _, st := range sts {
		v, ok := sum.To[st.Table]
		switch {
		case st.Table == failed:
			v = at + " (failed in its step down; partly applied)"
		case !ok:
			v = st.Current + " (not reached)"
		}
		parts = append(parts, st.Table+" "+v)
		if st.Table == failed {
			sum.To[st.Table] = at
		}
	}
	return fmt.Errorf("migrate: down to %s stopped part-way, tables are at mixed versions: %s; fix the cause and run down again (it resumes): %w",
		target, strings.Join(parts, ", "), err)
}

func (m *Manager) down300(ctx context.Context, st TableStatus, sum *Summary) ([]string, error) {
	switch st.Kind {
	case KindSessions:
		return m.down300Sessions(ctx, st, sum)
	case KindEvals, KindKnowledge:
		return m.dropUserID(ctx, st.Table, []string{"user_id"})
	case KindLearnings:
		// As Agno's down: the entity memory re-key is not reversed (the
		// legacy keys mixed users' rows; nothing safe to restore).
		m.log.Warn("migrate: the entity memory re-key is not reversed: namespace user entity rows stay on their per-user keys, where 2.x code does not find them",
			"table", st.Table)
		return []string{"entity memory re-key not reversed (rows stay on per-user keys)"}, nil
	case KindMetrics:
		if err := m.dropIndex(ctx, st.Table, metricsUnique(st.Table)); err != nil {
			return nil, err
		}
		actions, err := m.dropUserID(ctx, st.Table, []string{"user_id"})
		if err != nil {
			return nil, err
		}
		restored, err := m.restoreLegacyMetricsUnique(ctx, st.Table)
		return append(actions, restored...), err
	}
	return nil, nil
}

// downDroppedIndexes are the indexes over user_id the 3.0.0 down step drops
// before the column.
func downDroppedIndexes(table string) []string {
	return []string{indexName(table, []string{"user_id"}), metricsUnique(table)}
}

func (m *Manager) dropIndex(ctx context.Context, table, index string) error {
	if m.cfg.DryRun {
		return nil
	}
	ok, err := m.cat.indexExists(ctx, m.cfg.DB, table, index)
	if err != nil || !ok {
		return err
	}
	for _, q := range m.sd.DropIndex(table, index) {
		if _, err := m.cfg.DB.ExecContext(ctx, q); err != nil {
			// Dropped since the check: the same statement of an
			// interrupted Up or Down, which MySQL finishes after the client
			// is gone, waited on the table's lock ahead of this one. The
			// index is gone: done (see ensureIndex).
			if ok, cerr := m.cat.indexExists(ctx, m.cfg.DB, table, index); cerr == nil && !ok {
				return nil
			}
			return err
		}
	}
	return nil
}

func (m *Manager) dropUserID(ctx context.Context, table string, index []string) ([]string, error) {
	if err := m.dropIndex(ctx, table, indexName(table, index)); err != nil {
		return nil, err
	}
	cols, err := m.cat.columns(ctx, m.cfg.DB, table)
	if err != nil {
		return nil, err
	}
	if _, ok := cols["user_id"]; !ok {
		return nil, nil
	}
	cd := m.sd.Migration.ColumnDropper
	rebuild := false
	if cd != nil {
		// In a dry run the indexes Down drops first are still there.
		if rebuild, err = cd.Plan(ctx, m.cfg.DB, table, "user_id", downDroppedIndexes(table)...); err != nil {
			return nil, err
		}
	}
	if rebuild {
		if !m.cfg.DryRun {
			if err := cd.Rebuild(ctx, m.cfg.DB, table, "user_id"); err != nil {
				return nil, err
			}
		}
		return []string{"rebuild table without user_id (a constraint names it)"}, nil
	}
	if !m.cfg.DryRun {
		if _, err := m.cfg.DB.ExecContext(ctx, "ALTER TABLE "+m.qualify(table)+" DROP COLUMN user_id"); err != nil {
			if cd == nil {
				return nil, fmt.Errorf("drop column user_id: %w", err)
			}
			// A CHECK constraint can name the column too; SQLite says so
			// only when the DROP fails.
			if rerr := cd.Rebuild(ctx, m.cfg.DB, table, "user_id"); rerr != nil {
				return nil, fmt.Errorf("drop column user_id: %w; rebuild without it: %w", err, rerr)
			}
			return []string{"rebuild table without user_id (a constraint names it)"}, nil
		}
	}
	return []string{"drop column user_id"}, nil
}

// ErrOrphanRuns is returned by Down when the runs table holds runs whose
// session row the sessions table lacks (a writer deleted the session with
// foreign keys off, as a 2.x process on SQLite does): the legacy column has
// no row to hold them, so Down keeps the runs table and stops at 3.0.0.
var ErrOrphanRuns = errors.New("migrate: the runs table holds runs whose session is not in the sessions table")

// orphanSession is a session the runs table holds runs of and the sessions
// table lacks.
type orphanSession struct {
	id   string
	runs int64
	// some names up to three of its runs.
	some []string
}

// down300Sessions writes each session's merged runs back into the legacy
// column, batch by batch, then drops the runs table. Rerunning after a crash
// converges: the merge of an already rebuilt column with the table is the same.
func (m *Manager) down300Sessions(ctx context.Context, st TableStatus, sum *Summary) ([]string, error) {
	actions := []string{"rebuild runs column from " + m.tables.Runs, "drop table " + m.tables.Runs}
	if ok, err := m.cat.tableExists(ctx, m.cfg.DB, m.tables.Runs); err != nil || !ok {
		if err != nil {
			return nil, err
		}
		// An earlier Down stopped after its DROP (Status let the sessions
		// table through only with its record: else the runs table was
		// dropped by hand, and the legacy column may lack its runs).
		if marked, err := m.runsDropMarked(ctx); err != nil || !marked {
			if err == nil {
				err = &SchemaMismatchError{Table: st.Table, Detail: fmt.Sprintf("stamped %s but runs table %s is missing", st.Current, m.tables.Runs)}
			}
			return nil, err
		}
		actions = []string{"finish the interrupted drop of table " + m.tables.Runs + " (its runs were written back)"}
		if m.cfg.DryRun {
			return actions, nil
		}
		return actions, m.finishRunsDrop(ctx)
	}
	legacyType := m.sd.Types.JSON
	if _, err := m.addColumn(ctx, st.Table, "runs", legacyType); err != nil {
		return nil, err
	}
	var total int64
	q := "SELECT count(DISTINCT session_id) FROM " + m.qualify(m.tables.Runs)
	if err := m.cfg.DB.QueryRowContext(ctx, q).Scan(&total); err != nil {
		return nil, err
	}
	// Whether copy records exist, for leaving out the runs deleted after
	// their copy (the rebuild neither creates nor drops their table).
	records, err := m.readLedger(ctx)
	if err != nil {
		return nil, err
	}
	// A dry run reads what the rebuild would (rebuildLegacy without its
	// writes), unless the legacy column is gone (cleanup dropped it; a dry
	// run does not add it back): every session's is then empty, with no
	// deleted run to leave out.
	dryCount := m.cfg.DryRun && !st.LegacyRunsColumn
	start := time.Now()
	var done int64
	var unreadable []string
	var orphans []orphanSession
	var orphanRuns int64
	last, has := "", false
	for {
		where, args := "", []any{}
		if has {
			where, args = " WHERE session_id > ?", []any{last}
		}
		page, err := m.stringColumn(ctx, fmt.Sprintf("SELECT DISTINCT session_id FROM %s%s ORDER BY session_id LIMIT %d",
			m.qualify(m.tables.Runs), where, m.cfg.BatchSize), args...)
		if err != nil || len(page) == 0 {
			if err != nil {
				return nil, err
			}
			break
		}
		ids := page
		gone, err := m.orphansOf(ctx, ids)
		if err != nil {
			return nil, err
		}
		for _, o := range gone {
			orphanRuns += o.runs
			m.log.Warn("migrate: runs of a session the sessions table lacks: not written back", "session_id", o.id, "runs", o.runs)
		}
		orphans = append(orphans, gone...)
		ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool {
			return slices.ContainsFunc(gone, func(o orphanSession) bool { return o.id == id })
		})
		var res rebuilt
		switch {
		case len(ids) == 0:
		case dryCount:
			res.sessions = int64(len(ids))
			if res.runs, err = m.countRunsOf(ctx, ids); err != nil {
				return nil, err
			}
		default:
			if res, err = m.rebuildLegacy(ctx, ids, records); err != nil {
				return nil, err
			}
		}
		last, has = page[len(page)-1], true
		done += int64(len(page))
		sum.SessionsRebuilt += res.sessions
		sum.RunsRestored += res.runs
		sum.DeletedRunsLeftOut += res.deleted
		unreadable = append(unreadable, res.unreadable...)
		if m.cfg.Progress != nil {
			m.cfg.Progress(Progress{Step: "rebuild runs column", Table: st.Table, SessionsDone: done, SessionsTotal: total,
				RunsCopied: sum.RunsRestored, Elapsed: time.Since(start)})
		}
	}
	if !dryCount {
		// Sessions none of whose runs the runs table holds any more were
		// not visited: one may hold a run deleted after its copy.
		if err := m.rebuildRunless(ctx, st.Table, records, sum); err != nil {
			return nil, err
		}
	}
	if len(unreadable) > 0 {
		// Dropping the runs table now would lose these sessions' runs.
		outcome := "their runs could not be written back and table " + m.tables.Runs + " was kept"
		if m.cfg.DryRun {
			outcome = "down cannot write their runs back and would keep table " + m.tables.Runs
		}
		return nil, fmt.Errorf("the legacy runs column of %d sessions (%s) holds something other than a JSON array, so %s: set the column to NULL for them and run down again",
			len(unreadable), strings.Join(unreadable[:min(len(unreadable), 5)], ", "), outcome)
	}
	if len(orphans) > 0 {
		var named []string
		for _, o := range orphans[:min(len(orphans), 5)] {
			named = append(named, fmt.Sprintf("session %s: %d runs (%s)", o.id, o.runs, strings.Join(o.some, ", ")))
		}
		// Dropping the runs table now would lose them.
		outcome := "down wrote back every other session's runs but kept table " + m.tables.Runs
		if m.cfg.DryRun {
			outcome = "down would write back every other session's runs but keep table " + m.tables.Runs
		}
		return nil, fmt.Errorf("%w: %d runs of %d sessions (%s); %s: "+
			"restore those sessions' rows in %s, or delete their runs from %s if they are not wanted, and run down again",
			ErrOrphanRuns, orphanRuns, len(orphans), strings.Join(named, "; "), outcome, m.tables.Sessions, m.tables.Runs)
	}
	if m.cfg.DryRun {
		return actions, nil
	}
	// Every run is written back (each batch committed). Recorded before
	// the DROP, this lets a rerun after a crash past it tell this state
	// from a runs table dropped by hand, and finish (finishRunsDrop). The
	// copy records go after the DROP, in finishRunsDrop: a rerun after a
	// crash before it writes back again and still needs them to leave the
	// runs deleted after their copy out; kept, though, the next Up would
	// take every run they name for one deleted after its copy.
	if err := m.markRunsDrop(ctx); err != nil {
		return nil, err
	}
	if m.stopAt != nil {
		if err := m.stopAt("before runs drop"); err != nil {
			return nil, err
		}
	}
	if _, err := m.cfg.DB.ExecContext(ctx, "DROP TABLE "+m.qualify(m.tables.Runs)); err != nil {
		return nil, fmt.Errorf("drop table %s: %w", m.tables.Runs, err)
	}
	if m.stopAt != nil {
		if err := m.stopAt("after runs drop"); err != nil {
			return nil, err
		}
	}
	return actions, m.finishRunsDrop(ctx)
}

// rebuildRunless leaves the runs deleted after their copy out of the legacy
// column of the sessions the runs table holds no run of (down300Sessions
// visits only the others), adding what it did to sum. It reads them only
// while copy records exist (records: their table does), BatchSize sessions
// at a time (keyset on session_id, one transaction each), reporting
// Progress after each.
func (m *Manager) rebuildRunless(ctx context.Context, sessions string, records ledger, sum *Summary) error {
	if !records.exists {
		return nil
	}
	q, args := "SELECT run_id FROM "+m.qualify(m.tables.CopiedRuns), []any(nil)
	if records.scoped {
		q, args = q+" WHERE runs_table IN (?, '')", []any{m.tables.Runs}
	}
	if some, err := m.stringColumn(ctx, q+" ORDER BY run_id LIMIT 1", args...); err != nil || len(some) == 0 {
		return err
	}
	start := time.Now()
	var done int64
	last, has := "", false
	for {
		where, args := "", []any{}
		if has {
			where, args = " AND s.session_id > ?", []any{last}
		}
		page, err := m.stringColumn(ctx, fmt.Sprintf("SELECT s.session_id FROM %s s WHERE s.%s IS NOT NULL AND NOT EXISTS (SELECT 1 FROM %s r WHERE r.session_id = s.session_id)%s ORDER BY s.session_id LIMIT %d",
			m.qualify(sessions), m.quote("runs"), m.qualify(m.tables.Runs), where, m.cfg.BatchSize), args...)
		if err != nil || len(page) == 0 {
			return err
		}
		r, err := m.rebuildLegacy(ctx, page, records)
		if err != nil {
			return err
		}
		sum.SessionsRebuilt += r.sessions
		sum.DeletedRunsLeftOut += r.deleted
		last, has = page[len(page)-1], true
		done += int64(len(page))
		if m.cfg.Progress != nil {
			m.cfg.Progress(Progress{Step: "rebuild runs column: sessions without runs", Table: sessions, SessionsDone: done,
				RunsCopied: sum.RunsRestored, Elapsed: time.Since(start)})
		}
	}
}

// rebuilt is what rebuildLegacy did to a batch of sessions.
type rebuilt struct {
	sessions, runs int64
	// deleted counts the runs deleted after their copy it left out.
	deleted int64
	// unreadable lists sessions whose legacy column it left alone.
	unreadable []string
}

// orphansOf returns the sessions among ids (sessions the runs table holds
// runs of) that the sessions table lacks, with their run counts and a few
// run ids.
func (m *Manager) orphansOf(ctx context.Context, ids []string) ([]orphanSession, error) {
	q := fmt.Sprintf("SELECT r.session_id, count(*) FROM %s r WHERE r.session_id IN (%s) AND NOT EXISTS (SELECT 1 FROM %s s WHERE s.session_id = r.session_id) GROUP BY r.session_id ORDER BY r.session_id",
		m.qualify(m.tables.Runs), strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", "), m.qualify(m.tables.Sessions))
	rs, err := m.cfg.DB.QueryContext(ctx, m.q(q), anys(ids)...)
	if err != nil {
		return nil, fmt.Errorf("look for runs of missing sessions: %w", err)
	}
	var out []orphanSession
	for rs.Next() {
		var o orphanSession
		if err := rs.Scan(&o.id, &o.runs); err != nil {
			rs.Close()
			return nil, err
		}
		out = append(out, o)
	}
	if err := errors.Join(rs.Err(), rs.Close()); err != nil {
		return nil, err
	}
	for i := range out {
		some, err := m.stringColumn(ctx, "SELECT run_id FROM "+m.qualify(m.tables.Runs)+" WHERE session_id = ? ORDER BY run_id LIMIT 3", out[i].id)
		if err != nil {
			return nil, err
		}
		if int64(len(some)) < out[i].runs {
			some = append(some, "…")
		}
		out[i].some = some
	}
	return out, nil
}

// countRunsOf counts the runs-table rows of the given sessions.
func (m *Manager) countRunsOf(ctx context.Context, ids []string) (int64, error) {
	var n int64
	q := "SELECT count(*) FROM " + m.qualify(m.tables.Runs) + " WHERE session_id IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
	if err := m.cfg.DB.QueryRowContext(ctx, m.q(q), anys(ids)...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count runs: %w", err)
	}
	return n, nil
}

// rebuildLegacy writes the runs table's rows of the given sessions back
// into their legacy column; records says the copied-runs table exists. A
// dry run reads the same and counts, without writing.
func (m *Manager) rebuildLegacy(ctx context.Context, ids []string, records ledger) (rebuilt, error) {
	var res rebuilt
	tx, err := m.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return res, err
	}
	defer tx.Rollback()
	sel := fmt.Sprintf("SELECT %s FROM %s WHERE session_id = ?", m.jsonText(m.quote("runs")), m.qualify(m.tables.Sessions))
	upd := fmt.Sprintf("UPDATE %s SET %s = ? WHERE session_id = ?", m.qualify(m.tables.Sessions), m.quote("runs"))
	for _, id := range ids {
		var legacy []byte
		table, err := m.tableRuns(ctx, tx, id)
		if err != nil {
			return res, err
		}
		if err := tx.QueryRowContext(ctx, m.q(sel), id).Scan(&legacy); errors.Is(err, sql.ErrNoRows) && len(table) == 0 {
			continue // deleted with no runs: nothing to write back
		} else if errors.Is(err, sql.ErrNoRows) {
			// Deleted since orphansOf looked (foreign keys off).
			return res, fmt.Errorf("%w: session %s was deleted while down ran; its runs stay in table %s: run down again", ErrOrphanRuns, id, m.tables.Runs)
		} else if err != nil {
			return res, fmt.Errorf("read legacy runs of %s: %w", id, err)
		}
		elems, kind, _ := decodeLegacyRuns(legacy, false)
		if kind == BadNotArray || kind == BadInvalidJSON {
			if len(table) == 0 {
				continue // no row of the runs table to write back, and nothing to leave out of an unreadable value
			}
			// Never overwrite a value we cannot read: the source is kept and
			// the session is reported instead.
			m.log.Warn("migrate: legacy runs column not rebuilt: it does not hold an array", "session_id", id)
			res.unreadable = append(res.unreadable, id)
			continue
		}
		cands := legacyOnly(id, elems, table)
		gone, err := m.goneAfterCopy(ctx, tx, records, cands)
		if err != nil {
			return res, err
		}
		for _, r := range cands {
			if gone.changedSince(r) {
				m.log.Warn("migrate: run deleted from the runs table after its copy, then changed by a 2.x process: written back", "session_id", id, "run_id", r.RunID)
			}
		}
		merged, dropped := mergeRaw(id, elems, table, gone)
		if len(table) == 0 && dropped == 0 {
			continue // nothing to write back
		}
		if !m.cfg.DryRun {
			if _, err := tx.ExecContext(ctx, m.q(upd), m.encodeLegacyRuns(merged), id); err != nil {
				return res, fmt.Errorf("write legacy runs of %s: %w", id, err)
			}
		}
		res.sessions++
		res.runs += int64(len(table))
		res.deleted += int64(dropped)
	}
	if m.cfg.DryRun {
		return res, nil // the deferred Rollback ends the reads
	}
	return res, tx.Commit()
}

// mergeRaw merges legacy elements and table rows like MergeRuns but keeps
// every legacy element, migratable or not, so Down loses nothing, except a
// run deleted from the runs table after the copy whose element is still the
// one copied (gone.deleted): that deletion stays. One a 2.x process changed
// since is kept (see docs/adr/migrate-deleted-runs-stay-deleted.md). It
// returns the merged elements and how many deleted runs it left out.
func mergeRaw(sessionID string, elems []json.RawMessage, table []db.Run, gone goneRuns) ([]json.RawMessage, int) {
	byID := make(map[string]int, len(table))
	for i := range table {
		byID[table[i].RunID] = i
	}
	used := make([]bool, len(table))
	out := make([]json.RawMessage, 0, len(elems)+len(table))
	ls := legacySession{SessionID: sessionID}
	dropped := 0
	for i, e := range elems {
		r, bad, _ := elementToRun(ls, i, e)
		if bad == "" && gone.deleted(r) {
			dropped++
			continue
		}
		if bad == "" {
			// A repeated run_id keeps its later occurrences as they were, so
			// positions (and the next Up's run_index) do not shift.
			if j, ok := byID[r.RunID]; ok && !used[j] {
				used[j] = true
				out = append(out, table[j].RunData)
				continue
			}
		}
		if b, err := unwrapJSON(e); err == nil {
			e = b
		}
		out = append(out, e)
	}
	for j := range table {
		if !used[j] {
			out = append(out, table[j].RunData)
		}
	}
	return out, dropped
}

func (m *Manager) stringColumn(ctx context.Context, query string, args ...any) ([]string, error) {
	return m.stringColumnQ(ctx, m.cfg.DB, query, args...)
}

func (m *Manager) stringColumnQ(ctx context.Context, q queryer, query string, args ...any) ([]string, error) {
	return sqlstore.QueryStrings(ctx, q, m.q(query), args...)
}

// restoreLegacyMetricsUnique gives the metrics table Agno 2.x's unique key
// on (date, aggregation_period) back (Up drops it): 2.x writes metrics with
// ON CONFLICT (date, aggregation_period) on Postgres and SQLite, which
// fails without it. Rows of several users on one day (3.0's per-user
// metrics) cannot share it: the key is then left out, with a warning,
// rather than deleting rows.
func (m *Manager) restoreLegacyMetricsUnique(ctx context.Context, table string) ([]string, error) {
	name := legacyMetricsUnique(table)
	ok, err := m.cat.indexExists(ctx, m.cfg.DB, table, name)
	if err != nil || ok {
		return nil, err
	}
	var dups int64
	q := fmt.Sprintf("SELECT count(*) FROM (SELECT 1 AS one FROM %s GROUP BY %s, aggregation_period HAVING count(*) > 1) d",
		m.qualify(table), m.quote("date"))
	if err := m.cfg.DB.QueryRowContext(ctx, q).Scan(&dups); err != nil {
		return nil, fmt.Errorf("look for days with several metrics rows: %w", err)
	}
	if dups > 0 {
		m.log.Warn("migrate: the 2.x unique key on (date, aggregation_period) is not restored: days hold rows of several users; 2.x metrics writes need it",
			"table", table, "days", dups)
		return []string{fmt.Sprintf("unique (date, aggregation_period) not restored: %d days hold rows of several users", dups)}, nil
	}
	action := "restore unique (date, aggregation_period) " + name
	if m.cfg.DryRun {
		return []string{action}, nil
	}
	if err := m.ensureIndex(ctx, table, []string{"date", "aggregation_period"}, name); err != nil {
		return nil, err
	}
	return []string{action}, nil
}
