package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

const runCols = "run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, parent_run_id, status, run_index, run_data, created_at, updated_at"

// isForeignKeyViolation recognises each backend's FK error: SQLite's
// constraint message, Postgres SQLSTATE 23503, MySQL error 1452.
func isForeignKeyViolation(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "FOREIGN KEY constraint failed") || strings.Contains(msg, "SQLSTATE 23503") ||
		strings.Contains(msg, "Error 1452")
}

// GetRun returns a run in scope or ErrNotFound; a row whose run_data is not
// JSON is a *db.CorruptRowError.
func (s *Store) GetRun(ctx context.Context, runID string) (*db.Run, error) {
	return s.getRun(ctx, runID, func(q string, args ...any) *sql.Row { return s.queryRow(ctx, s.r, q, args...) }, "")
}

var _ db.TxRunReader = (*Store)(nil)

// GetRunTx is GetRun in the caller's transaction, the row locked until it
// ends (FOR UPDATE; SQLite's writer transaction excludes other writes).
func (s *Store) GetRunTx(ctx context.Context, tx *sql.Tx, runID string) (*db.Run, error) {
	return s.getRun(ctx, runID, func(q string, args ...any) *sql.Row { return tx.QueryRowContext(ctx, s.d.Bind(q), args...) }, s.forUpdate())
}

// getRun reads runID's row in scope through query, the statement ending
// with suffix.
func (s *Store) getRun(ctx context.Context, runID string, query func(q string, args ...any) *sql.Row, suffix string) (*db.Run, error) {
	w := &where{}
	w.add("run_id = ?", runID)
	s.scope(ctx, w)
	r, err := scanRun(query("SELECT "+runCols+" FROM "+s.runs+w.String()+suffix, w.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: run %s", db.ErrNotFound, runID)
	}
	var corrupt *db.CorruptRowError
	if errors.As(err, &corrupt) {
		return nil, err
	}
	if err != nil {
		return nil, s.fail("get run "+runID, err)
	}
	return r, nil
}

// runWhere builds the conditions of a RunFilter plus the context's scope.
// With a session the other columns go through noIndex so that the session's
// (session_id, run_index) index is the plan, not user_id's or agent_id's
// index covering that user's or agent's runs in every session.
func (s *Store) runWhere(ctx context.Context, f db.RunFilter) *where {
	x := func(col string) string { return col }
	if f.SessionID != "" {
		x = s.d.noIndex
	}
	w := &where{}
	w.eq("session_id", f.SessionID)
	s.userEq(w, x("user_id"), f.UserID)
	w.eq(x("agent_id"), f.AgentID)
	w.eq(x("team_id"), f.TeamID)
	w.eq(x("workflow_id"), f.WorkflowID)
	w.eq(x("parent_run_id"), f.ParentRunID)
	w.eq(x("run_type"), string(f.RunType))
	if len(f.Statuses) > 0 {
		w.add(x("status")+" IN ("+placeholders(len(f.Statuses))+")", anys(f.Statuses)...)
	}
	if u, ok := db.UserScope(ctx); ok {
		w.add(s.d.EqExact(x("user_id")), u)
	}
	return w
}

// GetRuns returns one page; the count is the total when f.WithTotal, else -1.
// Rows whose run_data is corrupt are left out of the page and reported as
// *db.CorruptRowError (joined) next to the rows that did decode.
//
// Page numbers are exact; pages of a session in run_index order come from
// its (session_id, run_index) index (indexPage), so a deep page costs a walk
// over index entries, not rows. f.AfterRunIndex is the keyset cursor that
// makes deep pages cost the same as the first.
func (s *Store) GetRuns(ctx context.Context, f db.RunFilter) ([]db.Run, int, error) {
	w := s.runWhere(ctx, f)
	total := -1
	if f.WithTotal {
		if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM "+s.runs+w.String()), w.args...).Scan(&total); err != nil {
			return nil, 0, s.fail("count runs", err)
		}
	}
	d := dir(f.SortOrder)
	var order string
	sortBy := sortCol(f.SortBy, "run_index", "run_index", "created_at", "updated_at")
	switch sortBy {
	case "created_at":
		order = "created_at " + d + ", run_index " + d
	case "updated_at":
		order = "updated_at " + d + ", run_index " + d
	default:
		order = "run_index " + d + ", created_at " + d
	}
	order += ", run_id " + d
	off := offset(f.Limit, f.Page)
	if f.AfterRunIndex != nil {
		if d == "DESC" {
			w.add("run_index < ?", *f.AfterRunIndex)
		} else {
			w.add("run_index > ?", *f.AfterRunIndex)
		}
	}
	if sortBy == "run_index" && f.SessionID != "" && s.wantIndexPage(off, f.AfterRunIndex != nil) {
		out, ok, err := s.indexPage(ctx, w, d, order, f.Limit, off)
		if ok || err != nil {
			return out, total, err
		}
	}
	lim, limArgs := s.limit(f.Limit, off)
	q := fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s%s", runCols, s.runs, w.String(), order, lim)
	out, err := s.queryRuns(ctx, q, append(slices.Clone(w.args), limArgs...)...)
	return out, total, err
}

// wantIndexPage says whether a page of a session in run_index order needs
// indexPage. Deep pages always do. Postgres plans a first or keyset page on
// the index with an incremental sort by itself, and SQLite does for a keyset
// page (the run_index range picks the index); there the deferred join would
// only add a statement. SQLite without statistics sorts the whole session for
// a first page, and MariaDB sorts everything after the cursor for a keyset
// page.
func (s *Store) wantIndexPage(off int, keyset bool) bool {
	if off > 0 || s.d.IndexFirstPage == nil {
		return true
	}
	return s.d.IndexFirstPage(keyset)
}

// indexPage returns the page at offset off of a session in run_index order
// (then created_at, run_id) from the (session_id, run_index) index, without
// reading skipped rows or sorting the session: a deferred join in two or
// three statements.
//
//  1. The run_index values at positions off-1 … off+limit-1 (from off when
//     off is 0), over the index alone when the session is the only condition.
//     Run order is run_index-major, so these are exactly the run_index
//     values of the page, plus the one before it.
//  2. Only if the page's first run_index continues the previous row's (a tie),
//     how many rows precede that group, hence how many of it precede the page.
//  3. The rows whose run_index lies in the page's range, fully ordered, from
//     that many in.
//
// Without the deferred join the tie-breakers make SQLite without statistics
// (a fresh database) and MariaDB sort the whole session even for page 1, and
// every backend read each skipped row for deep pages.
//
// ok is false when a NULL run_index is in the window (legacy rows, whose
// place depends on the backend); the caller then uses plain OFFSET. The
// statements are not one snapshot: a run written in between may shift the
// page exactly as it would between two page requests.
func (s *Store) indexPage(ctx context.Context, w *where, d, order string, limit, off int) (out []db.Run, ok bool, err error) {
	from := max(off-1, 0)
	lim, limArgs := s.limit(limit+off-from, from)
	q := fmt.Sprintf("SELECT run_index FROM %s%s ORDER BY run_index %s%s", s.runs, w.String(), d, lim)
	rows, err := s.query(ctx, s.r, q, append(slices.Clone(w.args), limArgs...)...)
	if err != nil {
		return nil, false, s.fail("get runs", err)
	}
	var keys []sql.NullInt64
	for rows.Next() {
		var src any
		if err := rows.Scan(&src); err != nil {
			rows.Close()
			return nil, false, s.fail("get runs", err)
		}
		k, exact := exactInt64(src)
		if !exact {
			// Another writer's REAL or text run_index: no bounds to page
			// by; the general way reads the page (and reports the row).
			rows.Close()
			return nil, false, nil
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, s.fail("get runs", err)
	}
	for _, k := range keys {
		if !k.Valid {
			return nil, false, nil
		}
	}
	if len(keys) <= off-from {
		return []db.Run{}, true, nil // the page is past the end
	}
	page := keys[off-from:]
	first, last := page[0].Int64, page[len(page)-1].Int64
	skip := 0
	if off > 0 && keys[0].Int64 == first {
		// A tie across the page start (legacy or caller-chosen run_index):
		// skip the rows of the group that come before the page.
		before := "<"
		if d == "DESC" {
			before = ">"
		}
		var n int
		cq := "SELECT COUNT(*) FROM " + s.runs + w.String() + " AND run_index " + before + " ?"
		if err := s.queryRow(ctx, s.r, cq, append(slices.Clone(w.args), first)...).Scan(&n); err != nil {
			return nil, false, s.fail("get runs", err)
		}
		skip = off - n
	}
	lo, hi := min(first, last), max(first, last)
	lim, limArgs = s.limit(limit, skip)
	q = fmt.Sprintf("SELECT %s FROM %s%s AND run_index BETWEEN ? AND ? ORDER BY %s%s", runCols, s.runs, w.String(), order, lim)
	out, err = s.queryRuns(ctx, q, append(slices.Clone(w.args), append([]any{lo, hi}, limArgs...)...)...)
	return out, true, err
}

// HistoryRuns returns the last q.Limit runs of a session that feed context
// (status not PAUSED, CANCELLED or ERROR; no parent run unless
// q.MemberRuns), oldest first.
//
// The order is run_index DESC, created_at DESC, run_id DESC, but the
// tie-breakers would make every planner sort the whole session. The query is
// therefore ORDER BY run_index DESC LIMIT q.Limit+1, which walks the
// (session_id, run_index) index backwards; when the rows show no tie on
// run_index up to the one past the limit and no NULL run_index, that is
// exactly the ordered result. Otherwise (legacy or caller-chosen indexes)
// historyWithTies gives it. noIndex keeps the planners off the single-column
// indexes (agent_id, status, user_id, …): SQLite prefers agent_id's without
// statistics and then scans every run of the agent.
func (s *Store) HistoryRuns(ctx context.Context, hq db.HistoryQuery) ([]db.Run, error) {
	w := s.historyWhere(ctx, hq)
	cols, args := s.historyCols(hq.Cached)
	q := "SELECT " + cols + " FROM " + s.runsOnSessionIndex() + w.String() + " ORDER BY run_index DESC" + historyLimit(hq.Limit+1)
	args = append(args, w.args...)
	rctx, pool, release, err := s.historyReader(ctx)
	if err != nil {
		return nil, s.fail("history runs", err)
	}
	rows, err := s.query(rctx, pool, q, args...)
	if err != nil {
		release()
		return nil, s.fail("history runs", err)
	}
	out, err := s.scanRunsOmitting(rows, len(hq.Cached) > 0)
	release()
	return s.historyResult(ctx, w, hq.Limit, out, err)
}

// historyResult finishes a history read of up to limit+1 runs in run_index
// DESC order: oldest first, or historyWithTies when run_index did not
// decide the order.
func (s *Store) historyResult(ctx context.Context, w *where, limit int, out []db.Run, err error) ([]db.Run, error) {
	if err != nil || !distinctRunIndexes(out, limit) {
		return s.historyWithTies(ctx, w, limit)
	}
	out = out[:min(len(out), limit)]
	slices.Reverse(out)
	return out, nil
}

// historySkipArgs are run.HistorySkipStatuses as query arguments, converted
// once rather than on every history read.
var historySkipArgs = anys(run.HistorySkipStatuses)

// historyWhere is the condition of a history query (see HistoryRuns).
func (s *Store) historyWhere(ctx context.Context, hq db.HistoryQuery) *where {
	c := &s.historyConds
	w := &where{conds: make([]string, 0, 6), args: make([]any, 0, 4+len(historySkipArgs))}
	w.add("session_id = ?", hq.SessionID)
	if !hq.MemberRuns {
		w.add(c.parentNull)
	}
	w.add(c.status, historySkipArgs...)
	if hq.AgentID != "" {
		w.add(c.agent, hq.AgentID)
	}
	if hq.TeamID != "" {
		w.add(c.team, hq.TeamID)
	}
	if u, ok := db.UserScope(ctx); ok {
		w.add(c.user, u)
	}
	return w
}

// historyConds are the texts of historyWhere's conditions other than the
// session's, built once per store: a history read is issued every turn.
type historyConds struct {
	parentNull, status, agent, team, user string
}

func (s *Store) buildHistoryConds() historyConds {
	x := s.d.noIndex
	return historyConds{
		parentNull: x("parent_run_id") + " IS NULL",
		status:     "(" + x("status") + " IS NULL OR " + x("status") + " NOT IN (?" + strings.Repeat(", ?", len(historySkipArgs)-1) + "))",
		agent:      x("agent_id") + " = ?",
		team:       x("team_id") + " = ?",
		user:       s.d.EqExact(x("user_id")),
	}
}

// historyCols is runCols for a history query: run_data is left out (NULL)
// for the runs the caller holds unchanged, so SQLite does not load their
// overflow pages and no backend sends or decodes them again. A run counts as
// unchanged when its updated_at and, where the dialect has ByteLength, its
// stored size match. The arguments come before the query's own.
func (s *Store) historyCols(cached []db.CachedRun) (string, []any) {
	if len(cached) == 0 {
		return runCols, nil
	}
	data, args := s.historyRunData(cached)
	return strings.Replace(runCols, "run_data", data, 1), args
}

// historyRunData is the run_data expression of a history query: run_data,
// or NULL for the runs cached names unchanged (see historyCols), with its
// arguments.
func (s *Store) historyRunData(cached []db.CachedRun) (string, []any) {
	if len(cached) == 0 {
		return "run_data", nil
	}
	if s.d.Name == "sqlite" {
		return cachedRunDataSQLite, []any{cachedRunsKey(cached)}
	}
	var b strings.Builder
	args := make([]any, 0, 3*len(cached))
	b.WriteString("CASE WHEN ")
	for i, c := range cached {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString("(run_id = ? AND updated_at = ?")
		args = append(args, c.RunID, c.UpdatedAt)
		if s.d.ByteLength != nil {
			b.WriteString(" AND " + s.d.ByteLength("run_data") + " = ?")
			args = append(args, c.Size)
		}
		b.WriteString(")")
	}
	b.WriteString(" THEN NULL ELSE run_data END")
	return b.String(), args
}

// cachedRunDataSQLite is historyRunData on SQLite (HistoryRuns;
// SessionHistoryRefs matches in Go, see buildSessionHistoryRefs): the cached runs are one
// argument, cachedRunsKey's text, and a row's run_data is left out when the
// row's own entry (id, updated_at, stored size) is found in it. One bound
// value and one statement text whatever the number of cached runs: the OR
// list binds three values per run (75 in the 25th turn of a conversation with
// the whole history, each a conversion in database/sql and the driver) and
// is one statement text per number of cached runs. A row whose updated_at
// or run_data is NULL, or whose updated_at is not stored as an integer, has
// no entry and keeps its run_data, as with the OR list.
const cachedRunDataSQLite = "CASE WHEN instr(?, ';' || replace(replace(replace(run_id, '%', '%25'), '/', '%2F'), ';', '%3B')" +
	" || '/' || updated_at || '/' || octet_length(run_data) || ';') > 0 THEN NULL ELSE run_data END"

// cachedRunsKey is the cached runs as cachedRunDataSQLite reads them:
// ";id/updated_at/size;id/updated_at/size;…", each id with '%', '/' and ';'
// escaped as in a URL, so the separators appear only as separators and an
// entry matches only itself.
func cachedRunsKey(cached []db.CachedRun) string {
	n := 1
	for _, c := range cached {
		n += len(c.RunID) + 24
	}
	var b strings.Builder // its String does not copy
	b.Grow(n)
	var num [20]byte
	b.WriteByte(';')
	for _, c := range cached {
		if strings.ContainsAny(c.RunID, "%/;") {
			b.WriteString(runIDEscaper.Replace(c.RunID))
		} else {
			b.WriteString(c.RunID)
		}
		b.WriteByte('/')
		b.Write(strconv.AppendInt(num[:0], c.UpdatedAt, 10))
		b.WriteByte('/')
		b.Write(strconv.AppendInt(num[:0], int64(c.Size), 10))
		b.WriteByte(';')
	}
	return b.String()
}

var runIDEscaper = strings.NewReplacer("%", "%25", "/", "%2F", ";", "%3B")

// distinctRunIndexes reports whether the first limit runs have a run_index and
// every run (up to the one past the limit) has a different one than the run
// before it, so that ordering by run_index alone decided the result.
func distinctRunIndexes(runs []db.Run, limit int) bool {
	for i, r := range runs {
		if r.RunIndex == nil {
			if i < limit {
				return false
			}
			continue
		}
		if i > 0 && *r.RunIndex == *runs[i-1].RunIndex {
			return false
		}
	}
	return true
}

// historyWithTies is HistoryRuns in the full order when run_index ties or is
// NULL. The first branch walks the index backwards to the lowest run_index
// among the last limit runs and takes the runs from there up, ties included;
// the second adds runs without a run_index, whose place in the order depends
// on the backend's NULL ordering. The final sort sees about limit rows.
func (s *Store) historyWithTies(ctx context.Context, w *where, limit int) ([]db.Run, error) {
	conds := w.String()
	q := "SELECT " + runCols + " FROM " + s.runsOnSessionIndex() + conds + " AND run_index >= (SELECT MIN(run_index) FROM (SELECT run_index FROM " +
		s.runs + conds + " AND run_index IS NOT NULL ORDER BY run_index DESC" + historyLimit(limit) + ") top)" +
		" UNION ALL SELECT " + runCols + " FROM " + s.runs + conds + " AND run_index IS NULL" +
		" ORDER BY run_index DESC, created_at DESC, run_id DESC" + historyLimit(limit)
	args := make([]any, 0, 3*len(w.args))
	args = append(append(append(args, w.args...), w.args...), w.args...)
	rows, err := s.query(ctx, s.r, q, args...)
	if err != nil {
		return nil, s.fail("history runs", err)
	}
	out, err := s.scanRuns(rows)
	slices.Reverse(out)
	return out, err
}

// runsOnSessionIndex is the runs table for a FROM clause that must use the
// (session_id, run_index) index. MariaDB otherwise takes idx_session_id when
// the run_index bound comes from a subquery (estimating the whole session)
// and reads every row; on the composite index it filters run_index inside
// the index (index condition pushdown).
func (s *Store) runsOnSessionIndex() string {
	return s.runsOnIndex
}

// DeleteRun deletes one run in scope; ErrNotFound if absent.
func (s *Store) DeleteRun(ctx context.Context, runID string) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	w := &where{}
	w.add("run_id = ?", runID)
	s.scope(ctx, w)
	res, err := s.w.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.runs+w.String()), w.args...)
	if err != nil {
		return s.fail("delete run "+runID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: run %s", db.ErrNotFound, runID)
	}
	return nil
}

// limit returns a LIMIT/OFFSET clause and its arguments. SQLite and MySQL
// bind them, so a page query's text repeats and the statement cache serves
// it. Postgres gets literals: pgx caches statements by text anyway, and a
// bound LIMIT would let a generic plan guess the row count.
func (s *Store) limit(limit, off int) (string, []any) {
	if !s.d.BindLimit {
		return fmt.Sprintf(" LIMIT %d OFFSET %d", limit, off), nil
	}
	return " LIMIT ? OFFSET ?", []any{limit, off}
}

// queryRuns runs a query of runCols on the reader, prepared once.
func (s *Store) queryRuns(ctx context.Context, q string, args ...any) ([]db.Run, error) {
	rows, err := s.query(ctx, s.r, q, args...)
	if err != nil {
		return nil, s.fail("get runs", err)
	}
	return s.scanRuns(rows)
}

// scanRuns reads and closes rows of runCols.
func (s *Store) scanRuns(rows *sql.Rows) ([]db.Run, error) {
	return s.scanRunsOmitting(rows, false)
}

// scanRunsOmitting is scanRuns; omitted allows a NULL run_data, which a
// history query returns for runs the caller holds (their RunData stays nil).
func (s *Store) scanRunsOmitting(rows *sql.Rows, omitted bool) ([]db.Run, error) {
	defer rows.Close()
	out := []db.Run{}
	var corrupt []error
	for rows.Next() {
		r, err := scanRunRaw(rows, omitted)
		var ce *db.CorruptRowError
		switch {
		case errors.As(err, &ce):
			corrupt = append(corrupt, err)
		case err != nil:
			return out, s.fail("get runs", err)
		default:
			out = append(out, *r)
		}
	}
	if err := rows.Err(); err != nil {
		return out, s.fail("get runs", err)
	}
	return out, errors.Join(corrupt...)
}

// scanRun reads one row of runCols.
func scanRun(sc scanner) (*db.Run, error) {
	var data []byte
	return scanRunInto(sc, &data, false)
}

// scanRunRaw reads one row of runCols from rows, taking run_data as the
// driver's bytes: decodeJSON's copy is then the only one.
func scanRunRaw(rows *sql.Rows, omitted bool) (*db.Run, error) {
	var data sql.RawBytes
	return scanRunInto(rows, (*[]byte)(&data), omitted)
}

func scanRunInto(sc scanner, data *[]byte, omitted bool) (*db.Run, error) {
	var (
		r                                 db.Run
		typ                               string
		agent, team, wf, user, parent, st sql.NullString
		idx, updated                      looseNull
	)
	dest := any(data)
	if _, raw := sc.(*sql.Rows); raw {
		dest = (*sql.RawBytes)(data)
	}
	if err := sc.Scan(&r.RunID, &r.SessionID, &typ, &agent, &team, &wf, &user, &parent, &st, &idx, dest, intCol{&r.CreatedAt}, &updated); err != nil {
		return nil, undecodable("runs", r.RunID, err)
	}
	r.RunType, r.Status = run.Type(typ), run.Status(st.String)
	r.AgentID, r.TeamID, r.WorkflowID, r.UserID, r.ParentRunID = agent.String, team.String, wf.String, user.String, parent.String
	r.UpdatedAt = updated.Int64
	if idx.Valid {
		r.RunIndex = &idx.Int64
	}
	if omitted && *data == nil {
		return &r, nil // run_data left out: the caller holds it
	}
	v, err := decodeRunData(*data)
	if err != nil {
		return nil, &db.CorruptRowError{Table: "runs", ID: r.RunID, Err: err}
	}
	r.RunData = v
	return &r, nil
}
