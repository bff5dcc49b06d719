package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

var _ db.MetricsDriver = (*Store)(nil)

const metricsCols = "id, user_id, date, agent_runs_count, team_runs_count, workflow_runs_count, agent_sessions_count, team_sessions_count, " +
	"workflow_sessions_count, users_count, token_metrics, model_metrics, aggregation_period, completed, created_at, updated_at"

func (s *Store) metrics() string { return s.d.Table(s.t.Metrics) }

// RunsCreatedIn pages runs created in [from, to) in (created_at, run_id)
// order. A row that does not decode is left out and reported (joined
// *db.CorruptRowError); the cursor passes it all the same.
//
// On SQLite a created_at may be another writer's REAL, which a run reads
// truncated: the cursor's position is then the stored value of its run's
// row, so that a page ending on such a run neither reads it again nor
// skips the runs stored later in the same second.
func (s *Store) RunsCreatedIn(ctx context.Context, from, to int64, after db.RunCursor, limit int) ([]db.Run, *db.RunCursor, error) {
	args := []any{from, to, after.CreatedAt, after.CreatedAt, after.RunID}
	if s.d.Name == "sqlite" {
		args = []any{from, to, after.RunID, after.CreatedAt, after.RunID, after.CreatedAt, after.RunID}
	}
	rows, err := s.r.QueryContext(ctx, s.d.Bind(RunsCreatedInSQL(s.d.Name, s.runs, limit)), args...)
	if err != nil {
		return nil, nil, s.fail("runs for metrics", err)
	}
	defer rows.Close()
	// Cells, so that a row that does not decode still gives its position.
	cells := make([]cell, nRunCols)
	dest := make([]any, len(cells))
	for i := range cells {
		dest[i] = &cells[i]
	}
	var (
		out     []db.Run
		corrupt []error
		n       int
		last    = after
	)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, s.fail("runs for metrics", err)
		}
		n++
		id, err := cellString(cells[0].v)
		if err != nil {
			return nil, nil, s.fail("runs for metrics", err)
		}
		last.RunID = id
		if at, _, err := cellInt64(cells[11].v); err == nil {
			last.CreatedAt = at
		}
		var data []byte
		r, err := scanRunInto(cellScanner{cells}, &data, false)
		var ce *db.CorruptRowError
		switch {
		case errors.As(err, &ce):
			corrupt = append(corrupt, err)
		case err != nil:
			return nil, nil, s.fail("runs for metrics", err)
		default:
			out = append(out, *r)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, s.fail("runs for metrics", err)
	}
	var next *db.RunCursor
	if n == limit {
		next = &last
	}
	return out, next, errors.Join(corrupt...)
}

// RunsCreatedInSQL is the statement RunsCreatedIn issues on the dialect
// named dialect against the runs table runs (as the statement names it),
// with ? placeholders. Exported for the migrate package's plan test, which
// explains the very statement the store runs.
func RunsCreatedInSQL(dialect, runs string, limit int) string {
	at := "?"
	if dialect == "sqlite" {
		at = "COALESCE((SELECT created_at FROM " + runs + " WHERE run_id = ?), ?)"
	}
	return fmt.Sprintf("SELECT %s FROM %s WHERE created_at >= ? AND created_at < ? AND (created_at > %s OR (created_at = %s AND run_id > ?)) "+
		"ORDER BY created_at, run_id LIMIT %d", runCols, runs, at, at, limit)
}

// SessionCountsIn counts sessions created in [from, to) by user and type.
func (s *Store) SessionCountsIn(ctx context.Context, from, to int64) ([]db.SessionCount, error) {
	// Grouped byte for byte: on a table with a case-insensitive collation
	// (Agno's, on MySQL) "Alice" and "alice" are two users, as the runs
	// are bucketed in Go.
	user := s.d.ByteKey("COALESCE(user_id, '')")
	rows, err := s.r.QueryContext(ctx, s.d.Bind("SELECT "+user+", session_type, COUNT(*) FROM "+s.sessions+
		" WHERE created_at >= ? AND created_at < ? GROUP BY "+user+", session_type"), from, to)
	if err != nil {
		return nil, s.fail("sessions for metrics", err)
	}
	defer rows.Close()
	var out []db.SessionCount
	for rows.Next() {
		var c db.SessionCount
		var typ string
		if err := rows.Scan(&c.UserID, &typ, &c.Count); err != nil {
			return nil, s.fail("sessions for metrics", err)
		}
		c.SessionType = run.Type(typ)
		out = append(out, c)
	}
	return out, s.fail("sessions for metrics", rows.Err())
}

// FirstRunCreatedAt is the oldest run's created_at.
func (s *Store) FirstRunCreatedAt(ctx context.Context) (int64, bool, error) {
	// A negative created_at (before 1970) is no run's time: counting from
	// it would walk days back to it, one by one.
	var v looseNull
	if err := s.r.QueryRowContext(ctx, "SELECT MIN(created_at) FROM "+s.runs+" WHERE created_at >= 0").Scan(&v); err != nil {
		return 0, false, s.fail("first run", err)
	}
	return v.Int64, v.Valid, nil
}

// NextActivityAt is the smallest created_at in [from, to) of a run or a
// session. On SQLite a created_at that is text (no number) sorts after
// every number and so is never in the range.
func (s *Store) NextActivityAt(ctx context.Context, from, to int64) (int64, bool, error) {
	var r, ss looseNull
	q := "SELECT (SELECT MIN(created_at) FROM " + s.runs + " WHERE created_at >= ? AND created_at < ?), " +
		"(SELECT MIN(created_at) FROM " + s.sessions + " WHERE created_at >= ? AND created_at < ?)"
	if err := s.r.QueryRowContext(ctx, s.d.Bind(q), from, to, from, to).Scan(&r, &ss); err != nil {
		return 0, false, s.fail("next activity", err)
	}
	switch {
	case r.Valid && ss.Valid:
		return min(r.Int64, ss.Int64), true, nil
	case r.Valid:
		return r.Int64, true, nil
	}
	return ss.Int64, ss.Valid, nil
}

// LastCompletedMetricsDate is the newest completed daily row's date.
func (s *Store) LastCompletedMetricsDate(ctx context.Context) (string, bool, error) {
	var v any
	err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT MAX(date) FROM "+s.metrics()+" WHERE completed = ? AND aggregation_period = ?"),
		true, db.DailyMetricsPeriod).Scan(&v)
	if err != nil {
		return "", false, s.fail("metrics watermark", err)
	}
	d := dateString(v)
	return d, d != "", nil
}

// dateString reads a DATE column as the drivers return it: time.Time
// (pgx), bytes (MySQL) or text (SQLite).
func dateString(v any) string {
	switch t := v.(type) {
	case time.Time:
		return t.UTC().Format(time.DateOnly)
	case []byte:
		return firstDate(string(t))
	case string:
		return firstDate(t)
	}
	return ""
}

func firstDate(s string) string {
	if len(s) >= 10 {
		return s[:10]
	}
	return s
}

// UpsertDailyMetrics writes rows keyed by (user_id, date, aggregation_period).
func (s *Store) UpsertDailyMetrics(ctx context.Context, rows []db.DailyMetrics) error {
	if len(rows) == 0 {
		return nil
	}
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	cols := splitCols(metricsCols)
	set := []string{"agent_runs_count", "team_runs_count", "workflow_runs_count", "agent_sessions_count", "team_sessions_count",
		"workflow_sessions_count", "users_count", "token_metrics", "model_metrics", "completed", "updated_at"}
	q := s.d.Bind(s.d.UpsertRow(s.metrics(), cols, []string{"user_id", "date", "aggregation_period"}, set))
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.fail("upsert metrics", err)
	}
	defer tx.Rollback()
	for _, m := range rows {
		if _, err := tx.ExecContext(ctx, q, m.ID, m.UserID, m.Date, m.AgentRunsCount, m.TeamRunsCount, m.WorkflowRunsCount,
			m.AgentSessionsCount, m.TeamSessionsCount, m.WorkflowSessionsCount, m.UsersCount, string(m.TokenMetrics),
			string(m.ModelMetrics), m.AggregationPeriod, m.Completed, m.CreatedAt, m.UpdatedAt); err != nil {
			return s.fail("upsert metrics "+m.Date, err)
		}
	}
	return s.fail("upsert metrics", tx.Commit())
}

// ListDailyMetrics returns rows by date, then user; an undecodable row is
// left out and reported as in ListSessions.
func (s *Store) ListDailyMetrics(ctx context.Context, f db.MetricsFilter) ([]db.DailyMetrics, error) {
	w := &where{}
	if f.From != "" {
		w.add("date >= ?", f.From)
	}
	if f.To != "" {
		w.add("date <= ?", f.To)
	}
	if f.ByUser || f.UserID != "" {
		w.add(s.d.EqExact("user_id"), f.UserID)
	}
	rows, err := s.r.QueryContext(ctx, s.d.Bind("SELECT "+metricsCols+" FROM "+s.metrics()+w.String()+" ORDER BY date, user_id"), w.args...)
	if err != nil {
		return nil, s.fail("list metrics", err)
	}
	defer rows.Close()
	out, corrupt, err := decodeRows(rows, []db.DailyMetrics{}, scanDailyMetrics)
	if err != nil {
		return nil, s.fail("list metrics", err)
	}
	return out, corrupt
}

func scanDailyMetrics(sc scanner) (*db.DailyMetrics, error) {
	var (
		m              db.DailyMetrics
		date           any
		tokens, models []byte
		counts         [7]looseNull
		updated        looseNull
	)
	if err := sc.Scan(&m.ID, &m.UserID, &date, &counts[0], &counts[1], &counts[2], &counts[3], &counts[4], &counts[5], &counts[6],
		&tokens, &models, &m.AggregationPeriod, &m.Completed, intCol{&m.CreatedAt}, &updated); err != nil {
		return nil, undecodable("metrics", m.ID, err)
	}
	m.Date, m.UpdatedAt = dateString(date), updated.Int64
	m.AgentRunsCount, m.TeamRunsCount, m.WorkflowRunsCount = counts[0].Int64, counts[1].Int64, counts[2].Int64
	m.AgentSessionsCount, m.TeamSessionsCount, m.WorkflowSessionsCount, m.UsersCount = counts[3].Int64, counts[4].Int64, counts[5].Int64, counts[6].Int64
	var err error
	if m.TokenMetrics, err = decodeJSON(tokens); err != nil {
		return nil, &db.CorruptRowError{Table: "metrics", ID: m.ID, Err: fmt.Errorf("token_metrics: %w", err)}
	}
	if m.ModelMetrics, err = decodeJSON(models); err != nil {
		return nil, &db.CorruptRowError{Table: "metrics", ID: m.ID, Err: fmt.Errorf("model_metrics: %w", err)}
	}
	return &m, nil
}
