package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
)

// memTraces holds agno_traces and agno_spans; the maps are made on first
// write and guarded by the driver's lock.
type memTraces struct {
	traces map[string]*db.Trace
	spans  map[string]*db.Span            // by span id
	byID   map[string]map[string]struct{} // trace id → its span ids
}

var _ db.TraceDriver = (*Driver)(nil)

func cloneSpan(s *db.Span) db.Span {
	cp := *s
	cp.Attributes = bytes.Clone(s.Attributes)
	return cp
}

// WriteTraces merges the traces (db.MergeTrace) and inserts the spans (an
// existing span id is kept), at once.
func (d *Driver) WriteTraces(ctx context.Context, traces []db.Trace, spans []db.Span) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	m := &d.tr
	if m.traces == nil {
		m.traces, m.spans, m.byID = map[string]*db.Trace{}, map[string]*db.Span{}, map[string]map[string]struct{}{}
	}
	for i := range traces {
		t := traces[i]
		t.TotalSpans, t.ErrorCount = 0, 0
		if old, ok := m.traces[t.TraceID]; ok {
			db.MergeTrace(old, &t)
			continue
		}
		m.traces[t.TraceID] = &t
	}
	for i := range spans {
		if _, ok := m.spans[spans[i].SpanID]; ok {
			continue
		}
		sp := cloneSpan(&spans[i])
		m.spans[sp.SpanID] = &sp
		if m.byID[sp.TraceID] == nil {
			m.byID[sp.TraceID] = map[string]struct{}{}
		}
		m.byID[sp.TraceID][sp.SpanID] = struct{}{}
	}
	return nil
}

// counted is a copy of t with its span and error counts.
func (m *memTraces) counted(t *db.Trace) db.Trace {
	cp := *t
	for id := range m.byID[t.TraceID] {
		cp.TotalSpans++
		if m.spans[id].StatusCode == "ERROR" {
			cp.ErrorCount++
		}
	}
	return cp
}

// GetTrace returns a trace in scope by id, or the latest of a run.
func (d *Driver) GetTrace(ctx context.Context, traceID, runID string) (*db.Trace, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var best *db.Trace
	for _, t := range d.tr.traces {
		if !visible(ctx, t.UserID) || (traceID != "" && t.TraceID != traceID) || (traceID == "" && t.RunID != runID) {
			continue
		}
		if best == nil || t.StartTime.After(best.StartTime) {
			best = t
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: trace %s", db.ErrNotFound, traceID+runID)
	}
	out := d.tr.counted(best)
	return &out, nil
}

// ListTraces returns a page of traces in scope, newest start first.
func (d *Driver) ListTraces(ctx context.Context, f db.TraceFilter) ([]db.Trace, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	var match []*db.Trace
	for _, t := range d.tr.traces {
		switch {
		case !visible(ctx, t.UserID),
			f.RunID != "" && t.RunID != f.RunID, f.SessionID != "" && t.SessionID != f.SessionID,
			f.UserID != "" && t.UserID != f.UserID, f.AgentID != "" && t.AgentID != f.AgentID,
			f.TeamID != "" && t.TeamID != f.TeamID, f.WorkflowID != "" && t.WorkflowID != f.WorkflowID,
			f.Status != "" && t.Status != f.Status,
			!f.StartAfter.IsZero() && db.TraceTime(t.StartTime) < db.TraceTime(f.StartAfter),
			!f.EndBefore.IsZero() && db.TraceTime(t.EndTime) > db.TraceTime(f.EndBefore),
			f.Expr != nil && exprHolds(f.Expr, t) != yes:
			continue
		}
		match = append(match, t)
	}
	slices.SortFunc(match, func(a, b *db.Trace) int {
		if c := b.StartTime.Compare(a.StartTime); c != 0 {
			return c
		}
		return cmp.Compare(b.TraceID, a.TraceID)
	})
	out := []db.Trace{}
	for _, t := range page(match, f.Limit, f.Page) {
		out = append(out, d.tr.counted(t))
	}
	return out, len(match), nil
}

// Spans returns a trace's spans, oldest start first.
func (d *Driver) Spans(ctx context.Context, traceID string) ([]db.Span, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []db.Span{}
	for id := range d.tr.byID[traceID] {
		out = append(out, cloneSpan(d.tr.spans[id]))
	}
	slices.SortFunc(out, func(a, b db.Span) int {
		if c := a.StartTime.Compare(b.StartTime); c != 0 {
			return c
		}
		return cmp.Compare(a.SpanID, b.SpanID)
	})
	return out, nil
}

// TraceSessionStats returns a page of per-session trace counts in scope,
// most recently traced session first.
func (d *Driver) TraceSessionStats(ctx context.Context, f db.TraceStatsFilter) ([]db.TraceSessionStats, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	bySession := map[string]*db.TraceSessionStats{}
	for _, t := range d.tr.traces {
		switch {
		case t.SessionID == "", !visible(ctx, t.UserID),
			f.UserID != "" && t.UserID != f.UserID, f.AgentID != "" && t.AgentID != f.AgentID,
			f.TeamID != "" && t.TeamID != f.TeamID, f.WorkflowID != "" && t.WorkflowID != f.WorkflowID,
			!f.CreatedAfter.IsZero() && db.TraceTime(t.CreatedAt) < db.TraceTime(f.CreatedAfter),
			!f.CreatedBefore.IsZero() && db.TraceTime(t.CreatedAt) > db.TraceTime(f.CreatedBefore),
			f.Expr != nil && exprHolds(f.Expr, t) != yes:
			continue
		}
		st := bySession[t.SessionID]
		if st == nil {
			st = &db.TraceSessionStats{SessionID: t.SessionID, FirstTraceAt: t.CreatedAt, LastTraceAt: t.CreatedAt}
			bySession[t.SessionID] = st
		}
		st.TotalTraces++
		// MAX(column), as SQL: the greatest non-empty value.
		for _, p := range [][2]*string{{&st.UserID, &t.UserID}, {&st.AgentID, &t.AgentID}, {&st.TeamID, &t.TeamID}, {&st.WorkflowID, &t.WorkflowID}} {
			*p[0] = max(*p[0], *p[1])
		}
		if t.CreatedAt.Before(st.FirstTraceAt) {
			st.FirstTraceAt = t.CreatedAt
		}
		if t.CreatedAt.After(st.LastTraceAt) {
			st.LastTraceAt = t.CreatedAt
		}
	}
	all := make([]*db.TraceSessionStats, 0, len(bySession))
	for _, st := range bySession {
		all = append(all, st)
	}
	slices.SortFunc(all, func(a, b *db.TraceSessionStats) int {
		if c := b.LastTraceAt.Compare(a.LastTraceAt); c != 0 {
			return c
		}
		return cmp.Compare(a.SessionID, b.SessionID)
	})
	out := []db.TraceSessionStats{}
	for _, st := range page(all, f.Limit, f.Page) {
		out = append(out, *st)
	}
	return out, len(all), nil
}

// DeleteTracesBefore deletes up to limit traces created before cutoff
// (oldest first) and their spans.
func (d *Driver) DeleteTracesBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	var old []*db.Trace
	for _, t := range d.tr.traces {
		if db.TraceTime(t.CreatedAt) < db.TraceTime(cutoff) {
			old = append(old, t)
		}
	}
	slices.SortFunc(old, func(a, b *db.Trace) int { return a.CreatedAt.Compare(b.CreatedAt) })
	if len(old) > limit {
		old = old[:limit]
	}
	for _, t := range old {
		d.tr.dropTrace(t.TraceID)
	}
	return len(old), nil
}

// dropTrace deletes a trace and its spans.
func (m *memTraces) dropTrace(traceID string) {
	for id := range m.byID[traceID] {
		delete(m.spans, id)
	}
	delete(m.byID, traceID)
	delete(m.traces, traceID)
}

// truth is SQL's three-valued logic: a comparison with a NULL column is
// unknown, and NOT unknown is unknown.
type truth int8

const (
	no truth = iota
	unknown
	yes
)

func truthOf(b bool) truth {
	if b {
		return yes
	}
	return no
}

// column is a trace's column as SQL sees it; ok is false for NULL.
func column(t *db.Trace, key string) (v any, ok bool) {
	text := func(s string) (any, bool) { return s, s != "" }
	switch key {
	case "trace_id":
		return t.TraceID, true
	case "name":
		return t.Name, true
	case "status":
		return t.Status, true
	case "start_time":
		return db.TraceTime(t.StartTime), true
	case "end_time":
		return db.TraceTime(t.EndTime), true
	case "created_at":
		return db.TraceTime(t.CreatedAt), true
	case "duration_ms":
		return t.DurationMS, true
	case "run_id":
		return text(t.RunID)
	case "session_id":
		return text(t.SessionID)
	case "user_id":
		return text(t.UserID)
	case "agent_id":
		return text(t.AgentID)
	case "team_id":
		return text(t.TeamID)
	case "workflow_id":
		return text(t.WorkflowID)
	}
	return nil, false
}

// compare orders a column value and a filter value: numbers as numbers,
// text as text (the parser gives duration_ms a number, others text).
func compare(col, val any) int {
	if n, ok := col.(int64); ok {
		switch v := val.(type) {
		case int64:
			return cmp.Compare(float64(n), float64(v))
		case float64:
			return cmp.Compare(float64(n), v)
		case string:
			f, _ := strconv.ParseFloat(v, 64)
			return cmp.Compare(float64(n), f)
		}
	}
	return strings.Compare(fmt.Sprint(col), fmt.Sprint(val))
}

// exprHolds evaluates a search filter on a trace as the SQL drivers do.
func exprHolds(e *db.TraceExpr, t *db.Trace) truth {
	switch e.Op {
	case "AND":
		out := yes
		for _, s := range e.Subs {
			out = min(out, exprHolds(s, t))
		}
		return out
	case "OR":
		out := no
		for _, s := range e.Subs {
			out = max(out, exprHolds(s, t))
		}
		return out
	case "NOT":
		return yes - exprHolds(e.Subs[0], t)
	}
	col, ok := column(t, e.Key)
	if !ok {
		return unknown
	}
	switch e.Op {
	case "IN":
		for _, v := range e.Values {
			if compare(col, v) == 0 {
				return yes
			}
		}
		return no
	case "CONTAINS":
		return truthOf(strings.Contains(strings.ToLower(fmt.Sprint(col)), strings.ToLower(fmt.Sprint(e.Value))))
	case "STARTSWITH":
		return truthOf(strings.HasPrefix(strings.ToLower(fmt.Sprint(col)), strings.ToLower(fmt.Sprint(e.Value))))
	}
	c := compare(col, e.Value)
	switch e.Op {
	case "EQ":
		return truthOf(c == 0)
	case "NEQ":
		return truthOf(c != 0)
	case "GT":
		return truthOf(c > 0)
	case "GTE":
		return truthOf(c >= 0)
	case "LT":
		return truthOf(c < 0)
	case "LTE":
		return truthOf(c <= 0)
	}
	return no
}
