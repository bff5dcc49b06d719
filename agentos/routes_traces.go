package agentos

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/db"
)

// The /traces routes read agno_traces and agno_spans (written by
// trace.Store when tracing.store is on) in AgentOS 3.0's shapes. A scoped
// caller sees only traces whose user_id is theirs: another user's trace,
// or one without an owner, is 404.

// traceTime renders a time as Pydantic does (UTC as Z, microseconds when
// there are any).
func traceTime(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02T15:04:05Z")
	}
	return t.Format("2006-01-02T15:04:05.000000Z")
}

// formatDurationMS is Agno's format_duration_ms: "150ms" or "1.50s".
func formatDurationMS(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%dms", max(ms, 0))
	}
	return fmt.Sprintf("%.2fs", float64(ms)/1000)
}

// traceSummary is AgentOS's TraceSummary (null fields omitted).
type traceSummary struct {
	TraceID    string  `json:"trace_id"`
	Name       string  `json:"name"`
	Status     string  `json:"status"`
	Duration   string  `json:"duration"`
	StartTime  string  `json:"start_time"`
	EndTime    string  `json:"end_time"`
	TotalSpans int     `json:"total_spans"`
	ErrorCount int     `json:"error_count"`
	Input      *string `json:"input,omitempty"`
	Output     *string `json:"output,omitempty"`
	Error      *string `json:"error,omitempty"`
	RunID      *string `json:"run_id,omitempty"`
	SessionID  *string `json:"session_id,omitempty"`
	UserID     *string `json:"user_id,omitempty"`
	AgentID    *string `json:"agent_id,omitempty"`
	TeamID     *string `json:"team_id,omitempty"`
	WorkflowID *string `json:"workflow_id,omitempty"`
	CreatedAt  string  `json:"created_at"`
}

// traceDetail is AgentOS's TraceDetail: the summary and the span tree.
type traceDetail struct {
	traceSummary
	Tree []*traceNode `json:"tree"`
}

// traceNode is AgentOS's TraceNode.
type traceNode struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Type      string         `json:"type"`
	Duration  string         `json:"duration"`
	StartTime string         `json:"start_time"`
	EndTime   string         `json:"end_time"`
	Status    string         `json:"status"`
	Input     *string        `json:"input,omitempty"`
	Output    *string        `json:"output,omitempty"`
	Error     *string        `json:"error,omitempty"`
	Spans     []*traceNode   `json:"spans,omitempty"`
	StepType  *string        `json:"step_type,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	ExtraData map[string]any `json:"extra_data,omitempty"`
}

// traceSessionStatsView is AgentOS's TraceSessionStats.
type traceSessionStatsView struct {
	SessionID    string  `json:"session_id"`
	UserID       *string `json:"user_id,omitempty"`
	AgentID      *string `json:"agent_id,omitempty"`
	TeamID       *string `json:"team_id,omitempty"`
	WorkflowID   *string `json:"workflow_id,omitempty"`
	TotalTraces  int     `json:"total_traces"`
	FirstTraceAt string  `json:"first_trace_at"`
	LastTraceAt  string  `json:"last_trace_at"`
}

func newTraceSummary(t *db.Trace) traceSummary {
	return traceSummary{TraceID: t.TraceID, Name: t.Name, Status: t.Status, Duration: formatDurationMS(t.DurationMS),
		StartTime: traceTime(t.StartTime), EndTime: traceTime(t.EndTime), TotalSpans: t.TotalSpans, ErrorCount: t.ErrorCount,
		RunID: optional(t.RunID), SessionID: optional(t.SessionID), UserID: optional(t.UserID), AgentID: optional(t.AgentID),
		TeamID: optional(t.TeamID), WorkflowID: optional(t.WorkflowID), CreatedAt: traceTime(t.CreatedAt)}
}

// span is a stored span with its attributes decoded.
type span struct {
	*db.Span
	attrs map[string]any
}

func decodeSpans(rows []db.Span) []span {
	out := make([]span, len(rows))
	for i := range rows {
		out[i] = span{Span: &rows[i], attrs: map[string]any{}}
		_ = json.Unmarshal(rows[i].Attributes, &out[i].attrs) // a non-object reads as no attributes
	}
	return out
}

func (s span) str(key string) *string {
	switch v := s.attrs[key].(type) {
	case string:
		return &v
	case nil:
		return nil
	default:
		b, _ := json.Marshal(v)
		out := string(b)
		return &out
	}
}

func (s span) kind() string {
	k, _ := s.attrs["openinference.span.kind"].(string)
	return k
}

// spanType is Agno's _derive_span_type.
func (s span) spanType() string {
	switch k := s.kind(); k {
	case "CHAIN":
		return "WORKFLOW"
	case "AGENT":
		if s.attrs["agno.team.id"] != nil || s.attrs["team.id"] != nil {
			return "TEAM"
		}
		return "AGENT"
	case "":
		return "UNKNOWN"
	default:
		return k
	}
}

func (s span) errorText() *string {
	if s.StatusMessage != "" {
		m := s.StatusMessage
		return &m
	}
	return s.str("exception.message")
}

// node is Agno's TraceNode.from_span.
func (s span) node(children []*traceNode) *traceNode {
	n := &traceNode{ID: s.SpanID, Name: s.Name, Type: s.spanType(), Duration: formatDurationMS(s.DurationMS),
		StartTime: traceTime(s.StartTime), EndTime: traceTime(s.EndTime), Status: s.StatusCode,
		Input: s.str("input.value"), Output: s.str("output.value"), Spans: children}
	if s.StatusCode == "ERROR" {
		n.Error, n.Output = s.errorText(), nil
	}
	md := map[string]any{}
	put := func(to, from string) {
		if v, ok := s.attrs[from]; ok && v != nil && v != "" && v != float64(0) {
			md[to] = v
		}
	}
	switch s.kind() {
	case "AGENT":
		put("run_id", "agno.run.id")
	case "LLM":
		put("model", "llm.model_name")
		put("input_tokens", "llm.token_count.prompt")
		put("output_tokens", "llm.token_count.completion")
	case "TOOL":
		put("tool_name", "tool.name")
		put("parameters", "tool.parameters")
	case "CHAIN":
		put("description", "agno.workflow.description")
		put("steps_count", "agno.workflow.steps_count")
		put("steps", "agno.workflow.steps")
		put("step_types", "agno.workflow.step_types")
	}
	put("session_id", "session.id")
	put("user_id", "user.id")
	if len(md) > 0 {
		n.Metadata = md
	}
	return n
}

func tokenCount(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// newTraceDetail is Agno's TraceDetail.from_trace_and_spans.
func newTraceDetail(t *db.Trace, rows []db.Span) traceDetail {
	spans := decodeSpans(rows)
	d := traceDetail{traceSummary: newTraceSummary(t), Tree: []*traceNode{}}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanID] = true
	}
	children := map[string][]span{}
	var roots []span
	var inTokens, outTokens int64
	for _, s := range spans {
		if s.ParentSpanID == "" || !ids[s.ParentSpanID] { // an orphan shows as a root
			roots = append(roots, s)
		} else {
			children[s.ParentSpanID] = append(children[s.ParentSpanID], s)
		}
		if s.kind() == "LLM" {
			inTokens += tokenCount(s.attrs["llm.token_count.prompt"])
			outTokens += tokenCount(s.attrs["llm.token_count.completion"])
		}
	}
	byStart := func(a, b span) int { return a.StartTime.Compare(b.StartTime) }
	slices.SortStableFunc(roots, byStart)
	if len(roots) > 0 {
		root := roots[0]
		d.Input = root.str("input.value")
		if t.Status == "ERROR" || root.StatusCode == "ERROR" {
			d.Error = root.errorText()
		} else {
			d.Output = root.str("output.value")
		}
	}
	var build func(s span, depth int) *traceNode
	build = func(s span, depth int) *traceNode {
		kids := children[s.SpanID]
		slices.SortStableFunc(kids, byStart)
		var nodes []*traceNode
		if depth < 100 { // a cycle of parent ids cannot recurse forever
			for _, k := range kids {
				nodes = append(nodes, build(k, depth+1))
			}
		}
		return s.node(nodes)
	}
	for _, r := range roots {
		n := build(r, 0)
		// The root shows the trace's timing and token totals; its input and
		// output are the trace's.
		n.StartTime, n.EndTime, n.Duration = d.StartTime, d.EndTime, d.Duration
		n.Input, n.Output, n.Error = nil, nil, nil
		md := map[string]any{}
		if inTokens > 0 {
			md["total_input_tokens"] = inTokens
		}
		if outTokens > 0 {
			md["total_output_tokens"] = outTokens
		}
		if r.kind() == "CHAIN" {
			for k, v := range n.Metadata {
				if k != "session_id" && k != "user_id" {
					md[k] = v
				}
			}
		}
		n.Metadata = nil
		if len(md) > 0 {
			n.Metadata = md
		}
		d.Tree = append(d.Tree, n)
	}
	return d
}

// parseTraceTimeParam reads an ISO 8601 query parameter (400 when bad, as
// Agno).
func parseTraceTimeParam(q url.Values, name string) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := db.ParseTraceTime(v)
	if err != nil {
		return time.Time{}, errorf(http.StatusBadRequest, "Invalid %s format. Use ISO 8601 format (e.g., '2025-11-19T10:00:00Z' or '2025-11-19T10:00:00+05:30')", name)
	}
	return t, nil
}

// traceDB is the database traces are read from; ok is false when it keeps
// none (the list routes then answer an empty page).
func (s *Server) traceDB(r *http.Request) (*db.DB, bool, error) {
	d, err := s.database(r)
	if err != nil {
		return nil, false, err
	}
	return d, d.StoresTraces(), nil
}

// listTraces is GET /traces.
func (s *Server) listTraces(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	d, ok, err := s.traceDB(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	pq, err := parsePageQuery(q, pageRules{})
	if err != nil {
		return err
	}
	f := db.TraceFilter{RunID: q.Get("run_id"), SessionID: q.Get("session_id"), UserID: actAs(r.Context(), q.Get("user_id")).id,
		AgentID: q.Get("agent_id"), TeamID: q.Get("team_id"), WorkflowID: q.Get("workflow_id"), Status: q.Get("status"),
		Limit: pq.Limit, Page: pq.Page}
	if f.StartAfter, err = parseTraceTimeParam(q, "start_time"); err != nil {
		return err
	}
	if f.EndBefore, err = parseTraceTimeParam(q, "end_time"); err != nil {
		return err
	}
	views := []traceSummary{}
	total := 0
	if ok {
		traces, n, err := d.ListTraces(r.Context(), f)
		if err = s.leaveOutCorrupt(r.Context(), "list traces", err); err != nil {
			return err
		}
		total = n
		for i := range traces {
			v := newTraceSummary(&traces[i])
			spans, err := d.Spans(r.Context(), traces[i].TraceID)
			if err = s.leaveOutCorrupt(r.Context(), "spans", err); err != nil {
				return err
			}
			for _, sp := range decodeSpans(spans) {
				if sp.ParentSpanID == "" {
					v.Input = sp.str("input.value")
					break
				}
			}
			views = append(views, v)
		}
	}
	writePage(w, views, pq, total, time.Since(start))
	return nil
}

// getTrace is GET /traces/{trace_id}: the trace with its span tree, or with
// span_id one span of it.
func (s *Server) getTrace(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "trace_id")
	d, ok, err := s.traceDB(r)
	if err != nil {
		return err
	}
	if !ok {
		return errorf(http.StatusNotFound, "Trace not found")
	}
	q := r.URL.Query()
	t, err := d.GetTrace(r.Context(), id, q.Get("run_id"))
	if errors.Is(err, db.ErrNotFound) {
		return errorf(http.StatusNotFound, "Trace not found")
	}
	if err != nil {
		return err
	}
	spans, err := d.Spans(r.Context(), t.TraceID)
	if err = s.leaveOutCorrupt(r.Context(), "spans", err); err != nil {
		return err
	}
	if spanID := q.Get("span_id"); spanID != "" {
		for _, sp := range decodeSpans(spans) {
			if sp.SpanID == spanID {
				writeJSON(w, http.StatusOK, sp.node(nil))
				return nil
			}
		}
		return errorf(http.StatusNotFound, "Span not found")
	}
	writeJSON(w, http.StatusOK, newTraceDetail(t, spans))
	return nil
}

// traceSessionStats is GET /trace_session_stats.
func (s *Server) traceSessionStats(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	d, ok, err := s.traceDB(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	pq, err := parsePageQuery(q, pageRules{})
	if err != nil {
		return err
	}
	f := db.TraceStatsFilter{UserID: actAs(r.Context(), q.Get("user_id")).id, AgentID: q.Get("agent_id"), TeamID: q.Get("team_id"),
		WorkflowID: q.Get("workflow_id"), Limit: pq.Limit, Page: pq.Page}
	if f.CreatedAfter, err = parseTraceTimeParam(q, "start_time"); err != nil {
		return err
	}
	if f.CreatedBefore, err = parseTraceTimeParam(q, "end_time"); err != nil {
		return err
	}
	views, total := []traceSessionStatsView{}, 0
	if ok {
		if views, total, err = sessionStatsViews(r, d, f); err != nil {
			return err
		}
	}
	writePage(w, views, pq, total, time.Since(start))
	return nil
}

func sessionStatsViews(r *http.Request, d *db.DB, f db.TraceStatsFilter) ([]traceSessionStatsView, int, error) {
	stats, total, err := d.TraceSessionStats(r.Context(), f)
	if err != nil {
		return nil, 0, err
	}
	views := make([]traceSessionStatsView, 0, len(stats))
	for _, st := range stats {
		views = append(views, traceSessionStatsView{SessionID: st.SessionID, UserID: optional(st.UserID), AgentID: optional(st.AgentID),
			TeamID: optional(st.TeamID), WorkflowID: optional(st.WorkflowID), TotalTraces: st.TotalTraces,
			FirstTraceAt: traceTime(st.FirstTraceAt), LastTraceAt: traceTime(st.LastTraceAt)})
	}
	return views, total, nil
}

// searchTraces is POST /traces/search: {"filter", "group_by": "run" |
// "session", "page", "limit" (≤ 100)}. A scoped caller's filter is ANDed
// with their user id.
func (s *Server) searchTraces(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	var req struct {
		Filter  json.RawMessage `json:"filter"`
		GroupBy *string         `json:"group_by"`
		Page    *int            `json:"page"`
		Limit   *int            `json:"limit"`
	}
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	groupBy, pq := "run", pageQuery{Page: 1, Limit: 20}
	if req.GroupBy != nil {
		groupBy = *req.GroupBy
	}
	if groupBy != "run" && groupBy != "session" {
		return errorf(http.StatusUnprocessableEntity, "group_by must be run or session")
	}
	if req.Page != nil {
		pq.Page = *req.Page
	}
	if req.Limit != nil {
		pq.Limit = *req.Limit
	}
	if pq.Page < 1 || pq.Limit < 1 || pq.Limit > 100 {
		return errorf(http.StatusUnprocessableEntity, "page must be at least 1 and limit from 1 to 100")
	}
	if err := checkPageOffset(pq.Page, pq.Limit); err != nil {
		return err
	}
	var expr *db.TraceExpr
	if len(req.Filter) > 0 && string(req.Filter) != "null" {
		var err error
		if expr, err = db.ParseTraceExpr(req.Filter); err != nil {
			return errorf(http.StatusBadRequest, "Invalid filter expression: %s", err)
		}
	}
	if u := actAs(r.Context(), ""); u.scoped {
		expr = expr.WithUser(u.id)
	}
	d, ok, err := s.traceDB(r)
	if err != nil {
		return err
	}
	if groupBy == "session" {
		views, total := []traceSessionStatsView{}, 0
		if ok {
			if views, total, err = sessionStatsViews(r, d, db.TraceStatsFilter{Expr: expr, Limit: pq.Limit, Page: pq.Page}); err != nil {
				return err
			}
		}
		writePage(w, views, pq, total, time.Since(start))
		return nil
	}
	details, total := []traceDetail{}, 0
	if ok {
		traces, n, err := d.ListTraces(r.Context(), db.TraceFilter{Expr: expr, Limit: pq.Limit, Page: pq.Page})
		if err = s.leaveOutCorrupt(r.Context(), "list traces", err); err != nil {
			return err
		}
		total = n
		for i := range traces {
			spans, err := d.Spans(r.Context(), traces[i].TraceID)
			if err = s.leaveOutCorrupt(r.Context(), "spans", err); err != nil {
				return err
			}
			details = append(details, newTraceDetail(&traces[i], spans))
		}
	}
	writePage(w, details, pq, total, time.Since(start))
	return nil
}

// traceFilterSchema is GET /traces/filter-schema: the fields the search
// filter takes, as Agno's TRACE_FILTER_SCHEMA.
func (s *Server) traceFilterSchema(w http.ResponseWriter, r *http.Request) error {
	text := []string{"EQ", "NEQ", "CONTAINS", "STARTSWITH", "IN"}
	times := []string{"GT", "GTE", "LT", "LTE"}
	type field struct {
		Key       string   `json:"key"`
		Label     string   `json:"label"`
		Type      string   `json:"type"`
		Operators []string `json:"operators"`
		Values    []string `json:"values,omitempty"`
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"fields": []field{
			{"status", "Status", "enum", []string{"EQ", "NEQ", "IN"}, []string{"OK", "ERROR"}},
			{"user_id", "User ID", "string", text, nil},
			{"agent_id", "Agent ID", "string", text, nil},
			{"team_id", "Team ID", "string", text, nil},
			{"workflow_id", "Workflow ID", "string", text, nil},
			{"session_id", "Session ID", "string", text, nil},
			{"run_id", "Run ID", "string", text, nil},
			{"name", "Trace Name", "string", []string{"EQ", "NEQ", "CONTAINS", "STARTSWITH"}, nil},
			{"trace_id", "Trace ID", "string", text, nil},
			{"duration_ms", "Duration (ms)", "number", []string{"EQ", "NEQ", "GT", "GTE", "LT", "LTE"}, nil},
			{"start_time", "Start Time", "datetime", times, nil},
			{"end_time", "End Time", "datetime", times, nil},
			{"created_at", "Created At", "datetime", times, nil},
		},
		"logical_operators": []string{"AND", "OR"},
	})
	return nil
}
