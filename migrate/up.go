package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

// Up moves every table to target (empty means Latest), one version step at a
// time, stamping each table after each step. Tables the database lacks are
// created at 3.0.0 when target is 3.0.0. At Latest, the runs table's indexes
// become the storage layer's (fewer than Agno declares, see
// docs/runs-indexes.md); Down to 3.0.0 restores Agno's. Up is resumable: after a crash at any
// point, running it again converges. Another migration of the same database
// makes Up wait up to Config.LockTimeout, then fail with ErrLocked.
func (m *Manager) Up(ctx context.Context, target string) (*Summary, error) {
	if target == "" {
		target = Latest
	}
	start := time.Now()
	release, sts, err := m.begin(ctx, target, target)
	if err != nil {
		return nil, err
	}
	defer release()
	for _, st := range sts {
		if st.DownInterrupted {
			return nil, ErrDownInterrupted
		}
	}
	if err := m.checkForeignKeyNames(ctx, sts); err != nil {
		return nil, err
	}
	if err := m.checkSessionsKey(ctx, sts); err != nil {
		return nil, err
	}
	if m.bad, err = m.loadPriorBad(ctx); err != nil {
		return nil, err
	}
	m.firstCopy, m.dryTaken = nil, nil
	defer func() { m.bad, m.firstCopy, m.dryTaken = nil, nil, nil }()
	sum := &Summary{DryRun: m.cfg.DryRun, From: map[string]string{}, To: map[string]string{}}
	for _, st := range sts {
		sum.From[st.Table] = st.Current
		cur := st.Current
		for _, v := range st.Pending {
			step := Step{Table: st.Table, From: cur, To: v}
			var err error
			if !st.Exists {
				step.Actions, err = m.createMissing(ctx, st.Kind)
			} else {
				step.Actions, err = m.upStep(ctx, st, v, sum)
			}
			if err != nil {
				return sum, fmt.Errorf("migrate: %s %s → %s: %w", st.Table, cur, v, err)
			}
			if !m.cfg.DryRun {
				if err := m.stamp(ctx, m.cfg.DB, st.Table, v); err != nil {
					return sum, err
				}
			}
			m.log.Info("migrate: step", "table", st.Table, "from", cur, "to", v, "dry_run", m.cfg.DryRun)
			sum.Steps = append(sum.Steps, step)
			cur = v
		}
		sum.To[st.Table] = cur
	}
	if target == Latest {
		actions, err := m.tuneRunsIndexes(ctx)
		if err != nil {
			return sum, fmt.Errorf("migrate: %s: %w", runsIndexStep, err)
		}
		if len(actions) > 0 {
			sum.Steps = append(sum.Steps, Step{Table: m.tables.Runs, From: Latest, To: Latest, Actions: actions})
			m.log.Info("migrate: "+runsIndexStep, "table", m.tables.Runs, "actions", actions, "dry_run", m.cfg.DryRun)
		}
	}
	for _, st := range sts {
		if st.Kind != KindSessions || !st.LegacyRunsColumn || sum.To[st.Table] != Latest {
			continue
		}
		// A 2.x process may still write runs into the legacy column: read
		// again what this Up's copy did not read (everything when the table
		// was at 3.0.0 already, the sessions before a resumed copy's
		// checkpoint otherwise) and copy the runs the runs table lacks.
		if pass, ok := m.catchUpPass(); ok {
			if _, err := m.copyRuns(ctx, sum, pass); err != nil {
				return sum, fmt.Errorf("migrate: %s: %w", pass.label, err)
			}
			if !m.cfg.DryRun {
				if err := m.clearCheckpoint(ctx, m.cfg.DB); err != nil {
					return sum, err
				}
			}
		}
		// Bad rows of earlier attempts can be retried while their source,
		// the legacy column, is there.
		if err := m.recheckBad(ctx, m.bad, sum); err != nil {
			return sum, fmt.Errorf("migrate: recheck bad rows of earlier attempts: %w", err)
		}
	}
	sum.Duration = time.Since(start)
	return sum, nil
}

// catchUpPass returns the copy pass that reads what this Up's first copy
// did not; ok is false when that copy read the whole column.
func (m *Manager) catchUpPass() (copyPass, bool) {
	switch fc := m.firstCopy; {
	case fc == nil:
		return catchUpCopy, true
	case fc.resumed:
		pass := catchUpCopy
		pass.until, pass.hasUntil = fc.from, true
		return pass, true
	}
	return copyPass{}, false
}

// begin starts Up or Down: it checks target, takes the database's lock and
// creates the bookkeeping tables (neither in a dry run), then reads every
// table's status against statusTarget. release frees the lock.
func (m *Manager) begin(ctx context.Context, target, statusTarget string) (release func(), sts []TableStatus, err error) {
	if versionIndex(target) < 0 {
		return nil, nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownVersion, target, Versions)
	}
	release = func() {}
	if m.readOnly && !m.cfg.DryRun {
		return nil, nil, ErrReadOnly
	}
	if !m.cfg.DryRun {
		if release, err = m.lock(ctx); err != nil {
			return nil, nil, err
		}
		if err := m.ensureBookkeeping(ctx, m.cfg.DB); err != nil {
			release()
			return nil, nil, err
		}
	}
	if sts, err = m.status(ctx, statusTarget); err != nil {
		release()
		return nil, nil, err
	}
	return release, sts, nil
}

// createMissing creates a table the database lacks, in its 3.0 layout.
func (m *Manager) createMissing(ctx context.Context, kind string) ([]string, error) {
	table := m.tables.Name(kind)
	actions := []string{"create table " + table}
	if kind == KindSessions {
		actions = append(actions, "create table "+m.tables.Runs)
	}
	if m.cfg.DryRun {
		return actions, nil
	}
	if err := m.createTable(ctx, kind); err != nil {
		return nil, err
	}
	if kind == KindSessions {
		if err := m.createTable(ctx, KindRuns); err != nil {
			return nil, err
		}
		if err := m.stamp(ctx, m.cfg.DB, m.tables.Runs, Latest); err != nil {
			return nil, err
		}
	}
	return actions, nil
}

// createTable creates a table and its indexes with the storage layer's 3.0
// DDL (the same the drivers run), which skips what already exists.
func (m *Manager) createTable(ctx context.Context, kind string) error {
	return m.runDDL(ctx, kind, 0, -1)
}

// runDDL runs statements [from, to) of a table's DDL (to < 0: all). The first
// statement creates the table, the others its indexes.
func (m *Manager) runDDL(ctx context.Context, kind string, from, to int) error {
	stmts, err := sqlstore.DDL(m.sd, m.tables, kind, Latest)
	if err != nil {
		return err
	}
	if to < 0 || to > len(stmts) {
		to = len(stmts)
	}
	for _, s := range stmts[from:to] {
		if _, err := m.cfg.DB.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("create table %s: %w", m.tables.Name(kind), err)
		}
	}
	return nil
}

// ensureIndex creates a non-unique index (or, when name is given, a unique
// one) unless it exists.
func (m *Manager) ensureIndex(ctx context.Context, table string, cols []string, unique string) error {
	name, kw := indexName(table, cols), "INDEX"
	if unique != "" {
		name, kw = unique, "UNIQUE INDEX"
	}
	ok, err := m.cat.indexExists(ctx, m.cfg.DB, table, name)
	if err != nil || ok {
		return err
	}
	q := fmt.Sprintf("CREATE %s %s ON %s (%s)", kw, m.quote(name), m.qualify(table), m.quoteList(cols))
	if _, err := m.cfg.DB.ExecContext(ctx, q); err != nil {
		// Created since the check: the same statement of an interrupted
		// Up, which MySQL finishes after the client is gone, waited on the
		// table's lock ahead of this one. The index is there: done.
		if ok, cerr := m.cat.indexExists(ctx, m.cfg.DB, table, name); cerr == nil && ok {
			return nil
		}
		return fmt.Errorf("create index on %s: %w", table, err)
	}
	return nil
}

func (m *Manager) quoteList(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = m.quote(c)
	}
	return strings.Join(q, ", ")
}

// addColumn adds a column unless it exists (DDL is not transactional on
// MySQL and SQLite, so every step checks before it changes).
func (m *Manager) addColumn(ctx context.Context, table, name, def string) (bool, error) {
	cols, err := m.cat.columns(ctx, m.cfg.DB, table)
	if err != nil {
		return false, err
	}
	if _, ok := cols[name]; ok {
		return false, nil
	}
	if m.cfg.DryRun {
		return true, nil
	}
	q := fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", m.qualify(table), m.quote(name), def)
	if _, err := m.cfg.DB.ExecContext(ctx, q); err != nil {
		// Added since the check, by an interrupted Up's statement (see
		// ensureIndex): the column is there.
		if cols, cerr := m.cat.columns(ctx, m.cfg.DB, table); cerr == nil {
			if _, ok := cols[name]; ok {
				return false, nil
			}
		}
		return false, fmt.Errorf("add column %s: %w", name, err)
	}
	return true, nil
}

// upStep applies one version step to an existing table and says what it did.
func (m *Manager) upStep(ctx context.Context, st TableStatus, v string, sum *Summary) ([]string, error) {
	switch v {
	case "2.3.0":
		return m.up230(ctx, st)
	case "2.5.0":
		if st.Kind == KindSessions {
			return m.up250Sessions(ctx, st.Table)
		}
	case "3.0.0":
		return m.up300(ctx, st, sum)
	}
	return nil, nil // 2.5.6 only changes the approvals table, which Agentry does not manage
}

// up230: memories gain created_at (filled from updated_at) and feedback;
// where the dialect's JSON is binary (Postgres), json columns become JSONB.
func (m *Manager) up230(ctx context.Context, st TableStatus) ([]string, error) {
	var actions []string
	for _, col := range sqlstore.ColumnsAddedIn("2.3.0", st.Kind) { // memories: created_at, feedback
		typ := m.sd.Types.Text
		if col == "created_at" {
			typ = m.sd.Types.BigInt
		}
		added, err := m.addColumn(ctx, st.Table, col, typ)
		if err != nil {
			return nil, err
		}
		if added {
			actions = append(actions, "add column "+col)
		}
		// Filled and indexed even when the column was there: an Up
		// stopped after adding it (the step is not stamped) filled
		// nothing yet, and its rows would keep a NULL created_at.
		if col == "created_at" && !m.cfg.DryRun {
			q := fmt.Sprintf("UPDATE %s SET created_at = COALESCE(updated_at, ?) WHERE created_at IS NULL", m.qualify(st.Table))
			if _, err := m.cfg.DB.ExecContext(ctx, m.q(q), time.Now().Unix()); err != nil {
				return nil, err
			}
			if err := m.ensureIndex(ctx, st.Table, []string{"created_at"}, ""); err != nil {
				return nil, err
			}
		}
	}
	if bj := m.sd.Migration.BinaryJSON; bj != nil {
		cols, err := m.cat.columns(ctx, m.cfg.DB, st.Table)
		if err != nil {
			return nil, err
		}
		for _, name := range slices.Sorted(maps.Keys(cols)) {
			if cols[name] != "json" {
				continue
			}
			if st.Kind == KindSessions && name == "runs" {
				// The legacy column becomes a frozen backup at 3.0.0; a run
				// holding U+0000 would make the whole conversion fail, so it
				// stays JSON then, and the copy records such runs as bad rows.
				nul, err := m.holdsNULEscape(ctx, bj, st.Table, name)
				if err != nil {
					return nil, err
				}
				if nul {
					actions = append(actions, "keep runs as JSON: a row holds \\u0000 (U+0000), which "+m.sd.Types.JSON+" cannot store")
					continue
				}
			}
			jt := m.sd.Types.JSON
			actions = append(actions, "convert "+name+" to "+jt)
			if m.cfg.DryRun {
				continue
			}
			if _, err := m.cfg.DB.ExecContext(ctx, bj.Convert(m.qualify(st.Table), m.quote(name))); err != nil {
				if st.Kind == KindSessions && name == "runs" && dataException(err) {
					// A value the binary type refuses besides U+0000 (an
					// unpaired surrogate escape): the statement changed
					// nothing, and the copy records such runs as bad rows.
					actions[len(actions)-1] = "keep runs as JSON: a row holds a value " + jt + " cannot store (" + err.Error() + ")"
					continue
				}
				return nil, fmt.Errorf("convert %s.%s to %s: %w", st.Table, name, jt, err)
			}
		}
	}
	return actions, nil
}

// dataException reports whether err is the server refusing a value (SQLSTATE
// class 22), as Postgres refuses json it cannot convert to jsonb.
func dataException(err error) bool {
	var se interface{ SQLState() string }
	return errors.As(err, &se) && strings.HasPrefix(se.SQLState(), "22")
}

// holdsNULEscape reports whether any value of a json column holds the
// escape \u0000.
func (m *Manager) holdsNULEscape(ctx context.Context, bj *sqlstore.BinaryJSON, table, col string) (bool, error) {
	var ok bool
	q, args := bj.HoldsNUL(m.qualify(table), m.quote(col))
	if err := m.cfg.DB.QueryRowContext(ctx, q, args...).Scan(&ok); err != nil {
		return false, fmt.Errorf("look for \\u0000 in %s.%s: %w", table, col, err)
	}
	return ok, nil
}

// checkSessionsKey refuses, before Up changes anything (and in a dry run),
// a sessions table whose 2.5.0 step would fail: it adds the primary key
// (session_id), which the server refuses while a session_id is NULL or
// shared by two rows (compared by the column's collation, as the key
// would).
func (m *Manager) checkSessionsKey(ctx context.Context, sts []TableStatus) error {
	for _, st := range sts {
		if st.Kind != KindSessions || !st.Exists || !slices.Contains(st.Pending, "2.5.0") {
			continue
		}
		has, err := m.hasPrimaryKey(ctx, st.Table)
		if err != nil || has {
			return err
		}
		t := m.qualify(st.Table)
		var nulls int64
		if err := m.cfg.DB.QueryRowContext(ctx, "SELECT count(*) FROM "+t+" WHERE session_id IS NULL").Scan(&nulls); err != nil {
			return fmt.Errorf("migrate: count sessions without session_id in %s: %w", st.Table, err)
		}
		dups, err := m.stringColumn(ctx, "SELECT min(session_id) FROM "+t+" WHERE session_id IS NOT NULL GROUP BY session_id HAVING count(*) > 1 ORDER BY 1 LIMIT 5")
		if err != nil {
			return fmt.Errorf("migrate: look for repeated session ids in %s: %w", st.Table, err)
		}
		if nulls == 0 && len(dups) == 0 {
			continue
		}
		var why []string
		if nulls > 0 {
			why = append(why, fmt.Sprintf("%d rows have no session_id", nulls))
		}
		if len(dups) > 0 {
			named, err := m.spellings(ctx, st.Table, dups)
			if err != nil {
				return err
			}
			why = append(why, "session ids held by more than one row: "+strings.Join(named, ", "))
		}
		return fmt.Errorf("migrate: %s %s → 2.5.0 would fail adding its primary key (session_id): %s; remove or merge those rows first (nothing changed)",
			st.Table, st.Current, strings.Join(why, "; "))
	}
	return nil
}

// spellings names each repeated session id with the spellings its rows
// hold when they differ: MySQL's default collation takes "s-1", "S-1" and
// "s-1 " for one key, which the message must show to be acted on.
func (m *Manager) spellings(ctx context.Context, table string, dups []string) ([]string, error) {
	if m.sd.Bytes == nil {
		return dups, nil // the key compares bytes
	}
	named := make([]string, len(dups))
	for i, d := range dups {
		held, err := m.stringColumn(ctx, fmt.Sprintf("SELECT DISTINCT %s FROM %s WHERE session_id = ? ORDER BY 1 LIMIT 5",
			m.sd.Bytes("session_id"), m.qualify(table)), d)
		if err != nil {
			return nil, fmt.Errorf("migrate: read the spellings of session id %q in %s: %w", d, table, err)
		}
		named[i] = d
		if len(held) > 1 {
			q := make([]string, len(held))
			for j, h := range held {
				q[j] = strconv.Quote(h)
			}
			named[i] = fmt.Sprintf("%s (spelled %s, one key under the column's collation)", d, strings.Join(q, ", "))
		}
	}
	return named, nil
}

// hasPrimaryKey reports whether a table has a primary key (always, on a
// dialect without the catalog query: every table it made has one).
func (m *Manager) hasPrimaryKey(ctx context.Context, table string) (bool, error) {
	if m.sd.Catalog.PrimaryKeys == nil {
		return true, nil
	}
	var n int
	q, args := m.sd.Catalog.PrimaryKeys(table)
	if err := m.cfg.DB.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return false, fmt.Errorf("migrate: look up the primary key of %s: %w", table, err)
	}
	return n > 0, nil
}

// up250Sessions makes session_id the primary key where an older table only
// had a unique constraint (Postgres, MySQL; SQLite always had the key).
func (m *Manager) up250Sessions(ctx context.Context, table string) ([]string, error) {
	has, err := m.hasPrimaryKey(ctx, table)
	if err != nil || has {
		return nil, err
	}
	if m.cfg.DryRun {
		return []string{"add primary key (session_id)"}, nil
	}
	if _, err := m.cfg.DB.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ADD PRIMARY KEY (session_id)", m.qualify(table))); err != nil {
		return nil, fmt.Errorf("add primary key on session_id (remove NULL or duplicate session ids first): %w", err)
	}
	return []string{"add primary key (session_id)"}, nil
}

// up300: sessions copy their runs into the runs table; evals, knowledge and
// metrics gain user_id.
func (m *Manager) up300(ctx context.Context, st TableStatus, sum *Summary) ([]string, error) {
	ty := m.sd.Types
	switch st.Kind {
	case KindSessions:
		return m.up300Sessions(ctx, st, sum)
	case KindLearnings:
		return m.rekeyLearnings(ctx, st, sum)
	case KindEvals, KindKnowledge:
		added, err := m.addColumn(ctx, st.Table, "user_id", ty.Key)
		if err != nil {
			return nil, err
		}
		var actions []string
		if added {
			actions = append(actions, "add column user_id")
		}
		if !m.cfg.DryRun {
			if err := m.ensureIndex(ctx, st.Table, []string{"user_id"}, ""); err != nil {
				return nil, err
			}
		}
		return append(actions, "index user_id"), nil
	case KindMetrics:
		added, err := m.addColumn(ctx, st.Table, "user_id", ty.Key+" NOT NULL DEFAULT ''")
		if err != nil {
			return nil, err
		}
		var actions []string
		if added {
			actions = append(actions, "add column user_id NOT NULL DEFAULT ''")
		}
		if !m.cfg.DryRun {
			if err := m.ensureIndex(ctx, st.Table, []string{"user_id"}, ""); err != nil {
				return nil, err
			}
			if err := m.ensureIndex(ctx, st.Table, []string{"user_id", "date", "aggregation_period"}, metricsUnique(st.Table)); err != nil {
				return nil, err
			}
		}
		actions = append(actions, "index user_id", "unique (user_id, date, aggregation_period)")
		// After the new key, so no moment is without one.
		dropped, err := m.dropLegacyMetricsUnique(ctx, st.Table)
		if err != nil {
			return nil, err
		}
		return append(actions, dropped...), nil
	}
	return nil, nil
}

func (m *Manager) up300Sessions(ctx context.Context, st TableStatus, sum *Summary) ([]string, error) {
	actions := []string{"create table " + m.tables.Runs}
	if f := m.sd.Migration.PrepareForeignKeyTarget; f != nil {
		a, err := f(ctx, m.cfg.DB, st.Table, m.cfg.DryRun)
		if err != nil {
			return nil, err
		}
		actions = append(a, actions...)
	}
	// On Postgres and MySQL the table's secondary indexes are built after the
	// copy: one bulk build per index is cheaper than maintaining nine indexes
	// row by row (run_data lives off-page, so the builds scan small rows). A
	// resumed copy finds the table without them and builds them when it
	// finishes. SQLite keeps run_data inline, where nine scans cost more.
	deferIndexes := m.sd.Migration.DeferIndexes
	if !m.cfg.DryRun {
		// Records of copies into a runs table that is gone (dropped by hand,
		// or by a Down that stopped before it cleared them) would make the
		// copy take every run they name for one deleted since.
		if ok, err := m.cat.tableExists(ctx, m.cfg.DB, m.tables.Runs); err != nil {
			return nil, err
		} else if !ok {
			if err := m.clearRecords(ctx); err != nil {
				return nil, err
			}
		}
		to := -1
		if deferIndexes {
			to = 1
		}
		if err := m.runDDL(ctx, KindRuns, 0, to); err != nil {
			return nil, err
		}
	}
	if st.LegacyRunsColumn {
		actions = append(actions, "copy runs into "+m.tables.Runs+" (legacy column kept)")
		if deferIndexes && m.sd.Migration.DeferForeignKeys != nil && !m.cfg.DryRun {
			if err := m.deferForeignKeys(ctx); err != nil {
				return nil, err
			}
		}
		start, err := m.copyRuns(ctx, sum, firstCopy)
		if err != nil {
			return nil, err
		}
		m.firstCopy = &start
	}
	actions = append(actions, "index "+m.tables.Runs)
	if m.cfg.DryRun {
		return actions, nil
	}
	if err := m.runDDL(ctx, KindRuns, 1, -1); err != nil { // no-op unless deferred
		return nil, err
	}
	if err := m.restoreDeferred(ctx); err != nil {
		return nil, err
	}
	if err := m.stamp(ctx, m.cfg.DB, m.tables.Runs, Latest); err != nil {
		return nil, err
	}
	if err := m.clearCheckpoint(ctx, m.cfg.DB); err != nil {
		return nil, err
	}
	return actions, nil
}

// deferForeignKeys drops the runs table's foreign keys for the copy with
// the dialect's DeferForeignKeys (checking each row costs about a fifth of
// the insert) after saving the statements that restore them in the progress
// row, in one transaction; restoreDeferred adds them back, validating every
// row at once, even after a crash in between.
func (m *Manager) deferForeignKeys(ctx context.Context) error {
	tx, err := m.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ddl, err := m.sd.Migration.DeferForeignKeys(ctx, tx, m.qualify(m.tables.Runs))
	if err != nil || len(ddl) == 0 {
		return err
	}
	q := m.sd.UpsertRow(m.qualify(m.tables.Progress),
		[]string{"table_name", "step", "last_session_id", "sessions_done", "runs_copied", "updated_at", "deferred_ddl"},
		[]string{"table_name"}, []string{"deferred_ddl"})
	if _, err := tx.ExecContext(ctx, m.q(q), m.tables.Sessions, "3.0.0", "", 0, 0, time.Now().Unix(), strings.Join(ddl, ";\n")); err != nil {
		return fmt.Errorf("save deferred foreign keys: %w", err)
	}
	return tx.Commit()
}

// restoreDeferred runs the DDL deferForeignKeys saved, if any.
func (m *Manager) restoreDeferred(ctx context.Context) error {
	var ddl sql.NullString
	err := m.cfg.DB.QueryRowContext(ctx, m.q("SELECT deferred_ddl FROM "+m.qualify(m.tables.Progress)+" WHERE table_name = ?"), m.tables.Sessions).Scan(&ddl)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !ddl.Valid {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read deferred DDL: %w", err)
	}
	tx, err := m.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Without the key, a session a 2.x process deleted during the copy kept
	// the runs already copied (no cascade), and adding the key back would
	// fail on them, on every later Up too: delete them as the cascade would
	// have (its legacy runs went with the session row).
	res, err := tx.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE NOT EXISTS (SELECT 1 FROM %s s WHERE s.session_id = %[1]s.session_id)",
		m.qualify(m.tables.Runs), m.qualify(m.tables.Sessions)))
	if err != nil {
		return fmt.Errorf("delete the runs of sessions deleted during the copy: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		m.log.Info("migrate: deleted the runs of sessions deleted during the copy", "table", m.tables.Runs, "runs", n)
	}
	for _, stmt := range strings.Split(ddl.String, ";\n") {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("restore %q: %w", stmt, err)
		}
	}
	return tx.Commit()
}

// legacyMetricsUnique is the name Agno 2.x gave the metrics table's unique
// key on (date, aggregation_period).
func legacyMetricsUnique(table string) string { return table + "_uq_metrics_date_period" }

// dropLegacyMetricsUnique drops Agno 2.x's unique key on (date,
// aggregation_period), as Agno 3.0's migration does: kept, it allows one
// row per day for all users together, so a second user's daily row fails
// (Postgres) or, under MySQL's ON DUPLICATE KEY UPDATE, overwrites the
// first's. On SQLite 2.x declared it in the table's statement, which only
// a rebuild changes (rebuildSQLiteMetrics).
func (m *Manager) dropLegacyMetricsUnique(ctx context.Context, table string) ([]string, error) {
	if m.sd.Name == "sqlite" {
		// Declared in the table's statement by 2.x (a rebuild drops
		// it), or a unique index of Down's (dropped below).
		rebuilt, err := m.rebuildSQLiteMetrics(ctx, table)
		if err != nil || len(rebuilt) > 0 {
			return rebuilt, err
		}
	}
	name := legacyMetricsUnique(table)
	ok, err := m.cat.indexExists(ctx, m.cfg.DB, table, name)
	if err != nil || !ok {
		return nil, err
	}
	if err := m.dropIndex(ctx, table, name); err != nil {
		return nil, fmt.Errorf("drop the 2.x unique key %s (date, aggregation_period): %w", name, err)
	}
	return []string{"drop unique (date, aggregation_period) " + name}, nil
}
