package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
)

const (
	traceCols = "trace_id, name, status, start_time, end_time, duration_ms, run_id, session_id, user_id, agent_id, team_id, workflow_id, created_at"
	spanCols  = "span_id, trace_id, parent_span_id, name, span_kind, status_code, status_message, start_time, end_time, duration_ms, attributes, created_at"
)

var _ db.TraceDriver = (*Store)(nil)

func (s *Store) traces() string { return s.d.Table(s.t.Traces) }
func (s *Store) spans() string  { return s.d.Table(s.t.Spans) }

func traceArgs(t *db.Trace) []any {
	return []any{t.TraceID, t.Name, t.Status, db.TraceTime(t.StartTime), db.TraceTime(t.EndTime), t.DurationMS, nullStr(t.RunID),
		nullStr(t.SessionID), nullStr(t.UserID), nullStr(t.AgentID), nullStr(t.TeamID), nullStr(t.WorkflowID), db.TraceTime(t.CreatedAt)}
}

// WriteTraces merges the traces and inserts the spans in one transaction.
func (s *Store) WriteTraces(ctx context.Context, traces []db.Trace, spans []db.Span) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.fail("write traces", err)
	}
	defer tx.Rollback()
	insertTrace := s.d.Bind(s.d.InsertIgnore(s.traces(), splitCols(traceCols), "trace_id"))
	selectTrace := s.d.Bind("SELECT " + traceCols + " FROM " + s.traces() + " WHERE trace_id = ?")
	updateTrace := s.d.Bind("UPDATE " + s.traces() + " SET name = ?, status = ?, start_time = ?, end_time = ?, duration_ms = ?, run_id = ?, " +
		"session_id = ?, user_id = ?, agent_id = ?, team_id = ?, workflow_id = ? WHERE trace_id = ?")
	for i := range traces {
		t := &traces[i]
		inserted, err := s.d.Inserted(tx.ExecContext(ctx, insertTrace, traceArgs(t)...))
		if err != nil {
			return s.fail("write trace "+t.TraceID, err)
		}
		if inserted {
			continue
		}
		old, err := scanTrace(tx.QueryRowContext(ctx, selectTrace, t.TraceID), false)
		var ce *db.CorruptRowError
		switch {
		case errors.As(err, &ce):
			// Another writer's row that does not decode: the incoming
			// trace replaces it rather than fail every later export.
			in := *t
			old = &in
		case err != nil:
			return s.fail("write trace "+t.TraceID, err)
		}
		db.MergeTrace(old, t)
		a := traceArgs(old)
		if _, err := tx.ExecContext(ctx, updateTrace, append(a[1:12:12], old.TraceID)...); err != nil {
			return s.fail("write trace "+t.TraceID, err)
		}
	}
	if err := s.insertSpans(ctx, tx, spans); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.fail("write traces", err)
	}
	return nil
}

// countCols counts a trace's spans and errored spans from agno_spans.
// spanChunks are the row counts of the multi-row span INSERTs: a batch of n
// spans goes out as a few statements of these sizes (23 spans: 16+4+1+1+1),
// not one statement per span, and each text stays the same from batch to
// batch, so prepared-statement caches keep serving it.
var spanChunks = [...]int{64, 16, 4, 1}

// spanColCount is the number of columns in spanCols.
const spanColCount = 12

// insertSpans inserts spans in tx, skipping any span_id already stored.
func (s *Store) insertSpans(ctx context.Context, tx *sql.Tx, spans []db.Span) error {
	args := make([]any, 0, spanColCount*min(len(spans), spanChunks[0]))
	for len(spans) > 0 {
		n := spanChunks[len(spanChunks)-1]
		for _, c := range spanChunks {
			if c <= len(spans) {
				n = c
				break
			}
		}
		args = args[:0]
		for i := range spans[:n] {
			sp := &spans[i]
			args = append(args, sp.SpanID, sp.TraceID, nullStr(sp.ParentSpanID), sp.Name, sp.SpanKind, sp.StatusCode,
				s.nullText(sp.StatusMessage), db.TraceTime(sp.StartTime), db.TraceTime(sp.EndTime), sp.DurationMS, s.jsonArg(sp.Attributes),
				db.TraceTime(sp.CreatedAt))
		}
		if _, err := tx.ExecContext(ctx, s.spanInsert(n), args...); err != nil {
			return s.fail(fmt.Sprintf("write %d spans from %s", n, spans[0].SpanID), err)
		}
		spans = spans[n:]
	}
	return nil
}

// spanInsert returns the INSERT of n span rows that skips stored span ids.
func (s *Store) spanInsert(n int) string {
	row := "(" + placeholders(spanColCount) + ")"
	values := strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
	return s.d.Bind(s.d.InsertIgnoreRows(s.spans(), spanCols, values, "span_id", "span_id"))
}

func (s *Store) countCols() string {
	sp := s.spans()
	return ", (SELECT COUNT(*) FROM " + sp + " s WHERE s.trace_id = t.trace_id)" +
		", (SELECT COUNT(*) FROM " + sp + " s WHERE s.trace_id = t.trace_id AND s.status_code = 'ERROR')"
}

// GetTrace returns a trace in scope by id, or the latest of a run.
func (s *Store) GetTrace(ctx context.Context, traceID, runID string) (*db.Trace, error) {
	w := &where{}
	if traceID != "" {
		w.add("trace_id = ?", traceID)
	} else {
		w.add("run_id = ?", runID)
	}
	s.scope(ctx, w)
	q := "SELECT " + traceCols + s.countCols() + " FROM " + s.traces() + " t" + w.String() + " ORDER BY start_time DESC LIMIT 1"
	t, err := scanTrace(s.r.QueryRowContext(ctx, s.d.Bind(q), w.args...), true)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: trace %s", db.ErrNotFound, traceID+runID)
	}
	if err != nil {
		return nil, s.fail("get trace", err)
	}
	return t, nil
}

func (s *Store) traceWhere(ctx context.Context, f db.TraceFilter) *where {
	w := &where{}
	w.eq("run_id", f.RunID)
	w.eq("session_id", f.SessionID)
	s.userEq(w, "user_id", f.UserID)
	w.eq("agent_id", f.AgentID)
	w.eq("team_id", f.TeamID)
	w.eq("workflow_id", f.WorkflowID)
	w.eq("status", f.Status)
	if !f.StartAfter.IsZero() {
		w.add("start_time >= ?", db.TraceTime(f.StartAfter))
	}
	if !f.EndBefore.IsZero() {
		w.add("end_time <= ?", db.TraceTime(f.EndBefore))
	}
	if f.Expr != nil {
		cond, args := s.exprSQL(f.Expr)
		w.add(cond, args...)
	}
	s.scope(ctx, w)
	return w
}

// ListTraces returns a page of traces in scope, newest start first.
func (s *Store) ListTraces(ctx context.Context, f db.TraceFilter) ([]db.Trace, int, error) {
	w := s.traceWhere(ctx, f)
	var total int
	if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM "+s.traces()+w.String()), w.args...).Scan(&total); err != nil {
		return nil, 0, s.fail("count traces", err)
	}
	q := fmt.Sprintf("SELECT %s%s FROM %s t%s ORDER BY start_time DESC, trace_id DESC LIMIT %d OFFSET %d",
		traceCols, s.countCols(), s.traces(), w.String(), f.Limit, offset(f.Limit, f.Page))
	rows, err := s.r.QueryContext(ctx, s.d.Bind(q), w.args...)
	if err != nil {
		return nil, 0, s.fail("list traces", err)
	}
	defer rows.Close()
	out, corrupt, err := decodeRows(rows, []db.Trace{}, func(sc scanner) (*db.Trace, error) { return scanTrace(sc, true) })
	if err != nil {
		return nil, 0, s.fail("list traces", err)
	}
	return out, total, corrupt
}

// Spans returns a trace's spans, oldest start first.
func (s *Store) Spans(ctx context.Context, traceID string) ([]db.Span, error) {
	rows, err := s.r.QueryContext(ctx, s.d.Bind("SELECT "+spanCols+" FROM "+s.spans()+" WHERE trace_id = ? ORDER BY start_time, span_id"), traceID)
	if err != nil {
		return nil, s.fail("spans of trace "+traceID, err)
	}
	defer rows.Close()
	out, corrupt, err := decodeRows(rows, []db.Span{}, scanSpan)
	if err != nil {
		return nil, s.fail("spans of trace "+traceID, err)
	}
	return out, corrupt
}

func scanSpan(sc scanner) (*db.Span, error) {
	var (
		sp                  db.Span
		parent, msg         sql.NullString
		start, end, created string
		attrs               []byte
	)
	if err := sc.Scan(&sp.SpanID, &sp.TraceID, &parent, &sp.Name, &sp.SpanKind, &sp.StatusCode, &msg, &start, &end, &sp.DurationMS,
		&attrs, &created); err != nil {
		return nil, undecodable("spans", sp.SpanID, err)
	}
	sp.ParentSpanID, sp.StatusMessage = parent.String, msg.String
	var err error
	if sp.StartTime, err = db.ParseTraceTime(start); err == nil {
		if sp.EndTime, err = db.ParseTraceTime(end); err == nil {
			sp.CreatedAt, err = db.ParseTraceTime(created)
		}
	}
	if err != nil {
		return nil, &db.CorruptRowError{Table: "spans", ID: sp.SpanID, Err: err}
	}
	if sp.Attributes, err = decodeJSON(attrs); err != nil {
		return nil, &db.CorruptRowError{Table: "spans", ID: sp.SpanID, Err: fmt.Errorf("attributes: %w", err)}
	}
	return &sp, nil
}

// TraceSessionStats returns a page of per-session trace counts in scope,
// most recently traced session first.
func (s *Store) TraceSessionStats(ctx context.Context, f db.TraceStatsFilter) ([]db.TraceSessionStats, int, error) {
	w := &where{}
	w.add("session_id IS NOT NULL")
	s.userEq(w, "user_id", f.UserID)
	w.eq("agent_id", f.AgentID)
	w.eq("team_id", f.TeamID)
	w.eq("workflow_id", f.WorkflowID)
	if !f.CreatedAfter.IsZero() {
		w.add("created_at >= ?", db.TraceTime(f.CreatedAfter))
	}
	if !f.CreatedBefore.IsZero() {
		w.add("created_at <= ?", db.TraceTime(f.CreatedBefore))
	}
	if f.Expr != nil {
		cond, args := s.exprSQL(f.Expr)
		w.add(cond, args...)
	}
	s.scope(ctx, w)
	var total int
	if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM (SELECT session_id FROM "+s.traces()+w.String()+" GROUP BY session_id) g"),
		w.args...).Scan(&total); err != nil {
		return nil, 0, s.fail("count trace sessions", err)
	}
	q := fmt.Sprintf("SELECT session_id, MAX(user_id), MAX(agent_id), MAX(team_id), MAX(workflow_id), COUNT(trace_id), MIN(created_at), MAX(created_at) "+
		"FROM %s%s GROUP BY session_id ORDER BY MAX(created_at) DESC, session_id LIMIT %d OFFSET %d", s.traces(), w.String(), f.Limit, offset(f.Limit, f.Page))
	rows, err := s.r.QueryContext(ctx, s.d.Bind(q), w.args...)
	if err != nil {
		return nil, 0, s.fail("trace session stats", err)
	}
	defer rows.Close()
	out := []db.TraceSessionStats{}
	for rows.Next() {
		var (
			st                          db.TraceSessionStats
			user, agent, team, workflow sql.NullString
			first, last                 string
		)
		if err := rows.Scan(&st.SessionID, &user, &agent, &team, &workflow, &st.TotalTraces, &first, &last); err != nil {
			return nil, 0, s.fail("trace session stats", err)
		}
		st.UserID, st.AgentID, st.TeamID, st.WorkflowID = user.String, agent.String, team.String, workflow.String
		if st.FirstTraceAt, err = db.ParseTraceTime(first); err == nil {
			st.LastTraceAt, err = db.ParseTraceTime(last)
		}
		if err != nil {
			return nil, 0, err
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.fail("trace session stats", err)
	}
	return out, total, nil
}

// DeleteTracesBefore deletes up to limit traces created before cutoff and
// their spans.
func (s *Store) DeleteTracesBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	rows, err := s.r.QueryContext(ctx, s.d.Bind(fmt.Sprintf("SELECT trace_id FROM %s WHERE created_at < ? ORDER BY created_at LIMIT %d", s.traces(), limit)),
		db.TraceTime(cutoff))
	if err != nil {
		return 0, s.fail("expired traces", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, s.fail("expired traces", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return 0, err
	}
	if err := s.gate.enter(ctx); err != nil {
		return 0, err
	}
	defer s.gate.leave()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, s.fail("delete traces", err)
	}
	defer tx.Rollback()
	in := " WHERE trace_id IN (" + placeholders(len(ids)) + ")"
	if _, err := tx.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.spans()+in), anys(ids)...); err != nil {
		return 0, s.fail("delete spans", err)
	}
	if _, err := tx.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.traces()+in), anys(ids)...); err != nil {
		return 0, s.fail("delete traces", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, s.fail("delete traces", err)
	}
	return len(ids), nil
}

// exprSQL renders a parsed search filter over agno_traces' columns (the
// parser allowed only those names).
func (s *Store) exprSQL(e *db.TraceExpr) (string, []any) {
	switch e.Op {
	case "AND", "OR":
		if len(e.Subs) == 0 {
			if e.Op == "AND" {
				return "1 = 1", nil
			}
			return "1 = 0", nil
		}
		parts := make([]string, len(e.Subs))
		var args []any
		for i, sub := range e.Subs {
			c, a := s.exprSQL(sub)
			parts[i] = "(" + c + ")"
			args = append(args, a...)
		}
		return strings.Join(parts, " "+e.Op+" "), args
	case "NOT":
		c, a := s.exprSQL(e.Subs[0])
		return "NOT (" + c + ")", a
	case "IN":
		if len(e.Values) == 0 {
			return "1 = 0", nil
		}
		return e.Key + " IN (" + placeholders(len(e.Values)) + ")", e.Values
	case "CONTAINS":
		return s.d.LikeContains(e.Key), []any{ContainsPattern(fmt.Sprint(e.Value))}
	case "STARTSWITH":
		return s.d.LikeContains(e.Key), []any{strings.TrimPrefix(ContainsPattern(fmt.Sprint(e.Value)), "%")}
	}
	if e.Op == "EQ" && e.Key == "user_id" {
		return s.d.EqExact(e.Key), []any{e.Value} // a user is matched exactly, as by the scope
	}
	op := map[string]string{"EQ": "=", "NEQ": "<>", "GT": ">", "GTE": ">=", "LT": "<", "LTE": "<="}[e.Op]
	return e.Key + " " + op + " ?", []any{e.Value}
}

func scanTrace(sc scanner, counts bool) (*db.Trace, error) {
	var (
		t                                         db.Trace
		run, session, user, agent, team, workflow sql.NullString
		start, end, created                       string
	)
	dest := []any{&t.TraceID, &t.Name, &t.Status, &start, &end, &t.DurationMS, &run, &session, &user, &agent, &team, &workflow, &created}
	if counts {
		dest = append(dest, &t.TotalSpans, &t.ErrorCount)
	}
	if err := sc.Scan(dest...); err != nil {
		return nil, undecodable("traces", t.TraceID, err)
	}
	t.RunID, t.SessionID, t.UserID, t.AgentID, t.TeamID, t.WorkflowID = run.String, session.String, user.String, agent.String, team.String, workflow.String
	var err error
	if t.StartTime, err = db.ParseTraceTime(start); err == nil {
		if t.EndTime, err = db.ParseTraceTime(end); err == nil {
			t.CreatedAt, err = db.ParseTraceTime(created)
		}
	}
	if err != nil {
		return nil, &db.CorruptRowError{Table: "traces", ID: t.TraceID, Err: err}
	}
	return &t, nil
}
