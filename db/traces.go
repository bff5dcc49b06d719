package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// TraceTimeLayout is how agno_traces and agno_spans keep times: ISO 8601
// in UTC with microseconds and a +00:00 offset, as Python's isoformat()
// writes them, so that a Python Agno reads the rows and times compare as
// strings.
const TraceTimeLayout = "2006-01-02T15:04:05.000000+00:00"

// TraceTime formats t for the trace tables.
func TraceTime(t time.Time) string { return t.UTC().Format(TraceTimeLayout) }

// ParseTraceTime reads a time from the trace tables (any ISO 8601 form
// Python writes, with or without fractional seconds; a missing offset is
// UTC).
func ParseTraceTime(s string) (time.Time, error) {
	s = strings.Replace(s, " ", "T", 1)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: %q is not an ISO 8601 time", ErrCorruptRow, s)
}

// Trace is one row of agno_traces: a trace's summary, its context (ids)
// taken from its top-level run span. TotalSpans and ErrorCount are not
// stored: reads count them from agno_spans, as Agno does.
type Trace struct {
	TraceID    string
	Name       string
	Status     string // OK, ERROR or UNSET
	StartTime  time.Time
	EndTime    time.Time
	DurationMS int64
	RunID      string
	SessionID  string
	UserID     string
	AgentID    string
	TeamID     string
	WorkflowID string
	CreatedAt  time.Time

	TotalSpans, ErrorCount int
}

// Span is one row of agno_spans. Attributes is a JSON object.
type Span struct {
	SpanID        string
	TraceID       string
	ParentSpanID  string
	Name          string
	SpanKind      string // INTERNAL, SERVER, CLIENT, PRODUCER, CONSUMER
	StatusCode    string // OK, ERROR or UNSET
	StatusMessage string
	StartTime     time.Time
	EndTime       time.Time
	DurationMS    int64
	Attributes    json.RawMessage
	CreatedAt     time.Time
}

// TraceFilter selects traces for a page, newest start first. Limit is
// required; Page starts at 1. Empty fields do not filter; StartAfter keeps
// traces starting at or after it, EndBefore those ending at or before it.
type TraceFilter struct {
	RunID, SessionID, UserID, AgentID, TeamID, WorkflowID, Status string
	StartAfter, EndBefore                                         time.Time
	// Expr is a /traces/search filter (ParseTraceExpr).
	Expr        *TraceExpr
	Limit, Page int
}

// TraceStatsFilter selects the sessions of trace_session_stats, most
// recently traced first; the times bound the traces' created_at.
type TraceStatsFilter struct {
	UserID, AgentID, TeamID, WorkflowID string
	CreatedAfter, CreatedBefore         time.Time
	Expr                                *TraceExpr
	Limit, Page                         int
}

// TraceSessionStats aggregates the traces of one session.
type TraceSessionStats struct {
	SessionID, UserID, AgentID, TeamID, WorkflowID string
	TotalTraces                                    int
	FirstTraceAt, LastTraceAt                      time.Time
}

// TraceDriver stores traces. Reads apply the context's user scope inside
// their queries (a scoped caller never sees a trace without its user id).
type TraceDriver interface {
	// WriteTraces merges traces (one per trace id: the earliest start, the
	// latest end, ERROR if any part errored, context ids kept once set)
	// and inserts spans (an existing span id is left as it is), in one
	// transaction.
	WriteTraces(ctx context.Context, traces []Trace, spans []Span) error
	// GetTrace returns the trace with traceID or, when traceID is empty,
	// the latest trace of runID; ErrNotFound when not in scope.
	GetTrace(ctx context.Context, traceID, runID string) (*Trace, error)
	ListTraces(ctx context.Context, f TraceFilter) ([]Trace, int, error)
	// Spans returns a trace's spans, oldest start first.
	Spans(ctx context.Context, traceID string) ([]Span, error)
	TraceSessionStats(ctx context.Context, f TraceStatsFilter) ([]TraceSessionStats, int, error)
	// DeleteTracesBefore deletes up to limit traces created before cutoff,
	// with their spans, and returns how many it deleted.
	DeleteTracesBefore(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

func (d *DB) traceDriver() (TraceDriver, error) {
	t, ok := d.driver.(TraceDriver)
	if !ok {
		return nil, fmt.Errorf("%w: the %s driver does not store traces", ErrUnsupportedDriver, d.driver.Dialect())
	}
	return t, nil
}

// StoresTraces reports whether the database can store traces.
func (d *DB) StoresTraces() bool { _, err := d.traceDriver(); return err == nil }

// WriteTraces stores a batch of traces and spans (the trace store's
// exporter calls it; it is not scoped: spans carry their own user).
func (d *DB) WriteTraces(ctx context.Context, traces []Trace, spans []Span) error {
	for _, s := range spans {
		if s.SpanID == "" || s.TraceID == "" {
			return fmt.Errorf("%w: a span needs span_id and trace_id", ErrInvalidRecord)
		}
		if len(s.Attributes) > 0 && !json.Valid(s.Attributes) {
			return fmt.Errorf("%w: attributes of span %s must be JSON", ErrInvalidRecord, s.SpanID)
		}
	}
	for _, t := range traces {
		if t.TraceID == "" {
			return fmt.Errorf("%w: a trace needs trace_id", ErrInvalidRecord)
		}
	}
	td, err := d.traceDriver()
	if err != nil {
		return err
	}
	bctx, call := d.bound(ctx)
	return call.done(td.WriteTraces(bctx, traces, spans))
}

// GetTrace returns a trace in scope (by trace id, or the latest of a run).
func (d *DB) GetTrace(ctx context.Context, traceID, runID string) (*Trace, error) {
	if traceID == "" && runID == "" {
		return nil, fmt.Errorf("%w: trace_id or run_id is required", ErrInvalidFilter)
	}
	td, err := d.traceDriver()
	if err != nil {
		return nil, err
	}
	bctx, call := d.bound(ctx)
	out, err := td.GetTrace(bctx, traceID, runID)
	return out, call.done(err)
}

// ListTraces returns a page of traces in scope and the total count.
func (d *DB) ListTraces(ctx context.Context, f TraceFilter) ([]Trace, int, error) {
	if err := checkLimitPage(f.Limit, f.Page); err != nil {
		return nil, 0, err
	}
	td, err := d.traceDriver()
	if err != nil {
		return nil, 0, err
	}
	scopeUser(ctx, &f.UserID)
	bctx, call := d.bound(ctx)
	out, n, err := td.ListTraces(bctx, f)
	return out, n, call.done(err)
}

// Spans returns the spans of a trace. It does not scope: read the trace
// with GetTrace first.
func (d *DB) Spans(ctx context.Context, traceID string) ([]Span, error) {
	td, err := d.traceDriver()
	if err != nil {
		return nil, err
	}
	bctx, call := d.bound(ctx)
	out, err := td.Spans(bctx, traceID)
	return out, call.done(err)
}

// TraceSessionStats returns a page of per-session trace counts in scope.
func (d *DB) TraceSessionStats(ctx context.Context, f TraceStatsFilter) ([]TraceSessionStats, int, error) {
	if err := checkLimitPage(f.Limit, f.Page); err != nil {
		return nil, 0, err
	}
	td, err := d.traceDriver()
	if err != nil {
		return nil, 0, err
	}
	scopeUser(ctx, &f.UserID)
	bctx, call := d.bound(ctx)
	out, n, err := td.TraceSessionStats(bctx, f)
	return out, n, call.done(err)
}

// DeleteTracesBefore deletes traces created before cutoff (retention), in
// chunks of limit, until none is left or ctx ends; it returns how many.
func (d *DB) DeleteTracesBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if limit <= 0 {
		limit = 500
	}
	td, err := d.traceDriver()
	if err != nil {
		return 0, err
	}
	total := 0
	for {
		bctx, call := d.bound(ctx)
		n, err := td.DeleteTracesBefore(bctx, cutoff, limit)
		if err = call.done(err); err != nil {
			return total, err
		}
		total += n
		if n < limit {
			return total, nil
		}
	}
}

// traceLevel ranks a trace's name source: a workflow's run span over a
// team's over an agent's over any other span (Agno's component level).
func traceLevel(t *Trace) int {
	if !strings.HasPrefix(t.Name, "invoke_agent ") && !strings.Contains(t.Name, ".run") && !strings.Contains(t.Name, ".arun") {
		return 0
	}
	switch {
	case t.WorkflowID != "":
		return 3
	case t.TeamID != "":
		return 2
	case t.AgentID != "":
		return 1
	}
	return 0
}

// MergeTrace folds a later batch's summary of a trace into the stored one
// (the TraceDriver.WriteTraces rule, shared by the drivers).
func MergeTrace(old, in *Trace) {
	if traceLevel(in) > traceLevel(old) {
		old.Name = in.Name
	}
	if in.StartTime.Before(old.StartTime) {
		old.StartTime = in.StartTime
	}
	if in.EndTime.After(old.EndTime) {
		old.EndTime = in.EndTime
	}
	old.DurationMS = old.EndTime.Sub(old.StartTime).Milliseconds()
	if old.Status != "ERROR" {
		old.Status = in.Status
	}
	for _, p := range [][2]*string{{&old.RunID, &in.RunID}, {&old.SessionID, &in.SessionID}, {&old.UserID, &in.UserID},
		{&old.AgentID, &in.AgentID}, {&old.TeamID, &in.TeamID}, {&old.WorkflowID, &in.WorkflowID}} {
		if *p[0] == "" {
			*p[0] = *p[1]
		}
	}
}

func checkLimitPage(limit, page int) error {
	if limit <= 0 {
		return fmt.Errorf("%w: limit must be positive", ErrInvalidFilter)
	}
	if page < 1 {
		return fmt.Errorf("%w: page starts at 1", ErrInvalidFilter)
	}
	if PageOffsetOverflows(limit, page) {
		return fmt.Errorf("%w: page %d is too large for limit %d", ErrInvalidFilter, page, limit)
	}
	return nil
}

// TraceColumns are the agno_traces columns a search filter may name.
var TraceColumns = []string{"trace_id", "name", "status", "start_time", "end_time", "duration_ms", "run_id",
	"session_id", "user_id", "agent_id", "team_id", "workflow_id", "created_at"}

var traceTimeColumns = []string{"start_time", "end_time", "created_at"}

// MaxTraceExprDepth bounds the nesting of a search filter, as Agno.
const MaxTraceExprDepth = 10

// ErrInvalidTraceExpr: a search filter is not a valid expression.
var ErrInvalidTraceExpr = errors.New("invalid filter expression")

// TraceExpr is a parsed /traces/search filter in Agno's FilterExpr shape:
// comparisons {"op": "EQ|NEQ|GT|GTE|LT|LTE|CONTAINS|STARTSWITH", "key",
// "value"}, {"op": "IN", "key", "values"}, and {"op": "AND|OR",
// "conditions"}, {"op": "NOT", "condition"}. Keys are TraceColumns; time
// values are normalized to TraceTime.
type TraceExpr struct {
	Op     string
	Key    string
	Value  any          // comparisons: a string or a number
	Values []any        // IN
	Subs   []*TraceExpr // AND, OR (any number), NOT (one)
}

// ParseTraceExpr validates a filter (a JSON object) into a TraceExpr;
// errors wrap ErrInvalidTraceExpr.
func ParseTraceExpr(raw json.RawMessage) (*TraceExpr, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTraceExpr, err)
	}
	return parseTraceExpr(v, 0)
}

func parseTraceExpr(v any, depth int) (*TraceExpr, error) {
	if depth > MaxTraceExprDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", ErrInvalidTraceExpr, MaxTraceExprDepth)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: a filter must be an object with an \"op\"", ErrInvalidTraceExpr)
	}
	op, _ := m["op"].(string)
	e := &TraceExpr{Op: op}
	switch op {
	case "EQ", "NEQ", "GT", "GTE", "LT", "LTE", "CONTAINS", "STARTSWITH", "IN":
		key, _ := m["key"].(string)
		if !slices.Contains(TraceColumns, key) {
			return nil, fmt.Errorf("%w: %s needs a \"key\" among %s", ErrInvalidTraceExpr, op, strings.Join(TraceColumns, ", "))
		}
		e.Key = key
		if op == "IN" {
			vals, ok := m["values"].([]any)
			if !ok {
				return nil, fmt.Errorf("%w: IN needs a \"values\" list", ErrInvalidTraceExpr)
			}
			for _, x := range vals {
				s, err := scalar(key, x)
				if err != nil {
					return nil, err
				}
				e.Values = append(e.Values, s)
			}
			return e, nil
		}
		s, err := scalar(key, m["value"])
		if err != nil {
			return nil, err
		}
		if (op == "CONTAINS" || op == "STARTSWITH") && key == "duration_ms" {
			return nil, fmt.Errorf("%w: %s applies to text columns", ErrInvalidTraceExpr, op)
		}
		e.Value = s
		return e, nil
	case "AND", "OR":
		conds, ok := m["conditions"].([]any)
		if !ok {
			return nil, fmt.Errorf("%w: %s needs a \"conditions\" list", ErrInvalidTraceExpr, op)
		}
		for _, c := range conds {
			sub, err := parseTraceExpr(c, depth+1)
			if err != nil {
				return nil, err
			}
			e.Subs = append(e.Subs, sub)
		}
		return e, nil
	case "NOT":
		sub, err := parseTraceExpr(m["condition"], depth+1)
		if err != nil {
			return nil, err
		}
		e.Subs = []*TraceExpr{sub}
		return e, nil
	}
	return nil, fmt.Errorf("%w: unknown op %q", ErrInvalidTraceExpr, op)
}

// scalar checks a comparison value: duration_ms takes a number within the
// int64 range, time columns an ISO 8601 time (normalized to UTC), others
// text.
func scalar(key string, v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if key != "duration_ms" {
			return x.String(), nil
		}
		n, err := x.Int64()
		if err != nil {
			f, ferr := x.Float64()
			if ferr != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrInvalidTraceExpr, key, err)
			}
			// The column is a 64-bit integer: Postgres cannot take a
			// parameter past its range.
			if f >= math.MaxInt64 || f < math.MinInt64 {
				return nil, fmt.Errorf("%w: %s: %s is out of range", ErrInvalidTraceExpr, key, x)
			}
			return f, nil
		}
		return n, nil
	case string:
		if key == "duration_ms" {
			return nil, fmt.Errorf("%w: duration_ms takes a number", ErrInvalidTraceExpr)
		}
		if slices.Contains(traceTimeColumns, key) {
			if t, err := ParseTraceTime(x); err == nil {
				return TraceTime(t), nil
			}
		}
		return x, nil
	case bool:
		return nil, fmt.Errorf("%w: %s takes text or a number", ErrInvalidTraceExpr, key)
	}
	return nil, fmt.Errorf("%w: %s needs a \"value\"", ErrInvalidTraceExpr, key)
}

// WithUser ANDs user_id = user into e (a scoped caller's search).
func (e *TraceExpr) WithUser(user string) *TraceExpr {
	u := &TraceExpr{Op: "EQ", Key: "user_id", Value: user}
	if e == nil {
		return u
	}
	return &TraceExpr{Op: "AND", Subs: []*TraceExpr{u, e}}
}
