package dbtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
)

// RunTraces runs the trace-store tests (agno_traces, agno_spans) on a
// driver that stores traces.
func RunTraces(t *testing.T, open Opener) {
	t.Helper()
	for name, fn := range traceTests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

var t0 = time.Date(2026, 11, 19, 10, 30, 0, 123456000, time.UTC)

func traceRow(id, user, session string, start time.Time, ms int64) db.Trace {
	return db.Trace{TraceID: id, Name: "invoke_agent A", Status: "OK", StartTime: start, EndTime: start.Add(time.Duration(ms) * time.Millisecond),
		DurationMS: ms, RunID: "run-" + id, SessionID: session, UserID: user, AgentID: "a", CreatedAt: start}
}

func spanRow(trace, id, parent, status string, start time.Time) db.Span {
	return db.Span{SpanID: id, TraceID: trace, ParentSpanID: parent, Name: "span " + id, SpanKind: "INTERNAL", StatusCode: status,
		StartTime: start, EndTime: start.Add(time.Millisecond), DurationMS: 1, Attributes: json.RawMessage(`{"k":"v","n":1}`), CreatedAt: start}
}

func traceIDs(ts []db.Trace) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.TraceID
	}
	return out
}

var traceTests = map[string]func(t *testing.T, d *db.DB){
	"Traces_WriteMergesAndCountsSpans": func(t *testing.T, d *db.DB) {
		// A first batch holds only a child span (no context); the root
		// arrives later, with an error in a third batch.
		child := traceRow("t1", "", "", t0.Add(time.Second), 10)
		child.Name, child.RunID, child.AgentID = "chat m", "", ""
		noErr(t, d.WriteTraces(bg, []db.Trace{child}, []db.Span{spanRow("t1", "s2", "s1", "OK", t0.Add(time.Second))}))
		root := traceRow("t1", "alice", "sess", t0, 2000)
		noErr(t, d.WriteTraces(bg, []db.Trace{root}, []db.Span{spanRow("t1", "s1", "", "OK", t0)}))
		bad := traceRow("t1", "mallory", "other", t0.Add(3*time.Second), 10)
		bad.Status, bad.Name = "ERROR", "execute_tool x"
		noErr(t, d.WriteTraces(bg, []db.Trace{bad}, []db.Span{spanRow("t1", "s3", "s1", "ERROR", t0.Add(3*time.Second)),
			spanRow("t1", "s1", "", "OK", t0)})) // a repeated span is ignored
		got, err := d.GetTrace(bg, "t1", "")
		noErr(t, err)
		if got.Name != "invoke_agent A" || got.UserID != "alice" || got.SessionID != "sess" || got.RunID != "run-t1" || got.Status != "ERROR" ||
			!got.StartTime.Equal(t0) || !got.EndTime.Equal(t0.Add(3*time.Second+10*time.Millisecond)) || got.DurationMS != 3010 ||
			got.TotalSpans != 3 || got.ErrorCount != 1 {
			t.Fatalf("merged trace %+v", got)
		}
		spans, err := d.Spans(bg, "t1")
		noErr(t, err)
		if len(spans) != 3 || spans[0].SpanID != "s1" || spans[0].ParentSpanID != "" || spans[1].ParentSpanID != "s1" {
			t.Fatalf("spans %+v", spans)
		}
		var attrs map[string]any
		if err := json.Unmarshal(spans[0].Attributes, &attrs); err != nil || attrs["k"] != "v" || attrs["n"] != float64(1) {
			t.Fatalf("attributes %s", spans[0].Attributes)
		}
		byRun, err := d.GetTrace(bg, "", "run-t1")
		noErr(t, err)
		if byRun.TraceID != "t1" {
			t.Fatalf("by run %+v", byRun)
		}
	},
	"Traces_ListFiltersPagesAndScopes": func(t *testing.T, d *db.DB) {
		var rows []db.Trace
		for i, u := range []string{"alice", "bob", "alice", "", "alice"} {
			rows = append(rows, traceRow(string(rune('a'+i)), u, "s-"+u, t0.Add(time.Duration(i)*time.Minute), int64(100*(i+1))))
		}
		rows[1].Status = "ERROR"
		noErr(t, d.WriteTraces(bg, rows, nil))
		all, total, err := d.ListTraces(bg, db.TraceFilter{Limit: 2, Page: 1})
		noErr(t, err)
		if total != 5 || !slices.Equal(traceIDs(all), []string{"e", "d"}) {
			t.Fatalf("page 1: %d %v", total, traceIDs(all))
		}
		p3, _, err := d.ListTraces(bg, db.TraceFilter{Limit: 2, Page: 3})
		noErr(t, err)
		if !slices.Equal(traceIDs(p3), []string{"a"}) {
			t.Fatalf("page 3: %v", traceIDs(p3))
		}
		alice := db.WithUserScope(bg, "alice")
		mine, total, err := d.ListTraces(alice, db.TraceFilter{Limit: 10, Page: 1, UserID: "bob"})
		noErr(t, err)
		if total != 3 || !slices.Equal(traceIDs(mine), []string{"e", "c", "a"}) {
			t.Fatalf("alice's: %d %v", total, traceIDs(mine))
		}
		if _, err := d.GetTrace(alice, "b", ""); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("another user's trace: %v", err)
		}
		if _, err := d.GetTrace(alice, "d", ""); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("an unowned trace: %v", err)
		}
		errs, _, err := d.ListTraces(bg, db.TraceFilter{Limit: 10, Page: 1, Status: "ERROR"})
		noErr(t, err)
		if !slices.Equal(traceIDs(errs), []string{"b"}) {
			t.Fatalf("errors: %v", traceIDs(errs))
		}
		window, _, err := d.ListTraces(bg, db.TraceFilter{Limit: 10, Page: 1, StartAfter: t0.Add(time.Minute), EndBefore: t0.Add(3 * time.Minute)})
		noErr(t, err)
		if !slices.Equal(traceIDs(window), []string{"c", "b"}) {
			t.Fatalf("window: %v", traceIDs(window))
		}
		expr, err := db.ParseTraceExpr(json.RawMessage(`{"op":"AND","conditions":[{"op":"GTE","key":"duration_ms","value":200},
			{"op":"NOT","condition":{"op":"IN","key":"trace_id","values":["c"]}},{"op":"OR","conditions":[{"op":"CONTAINS","key":"user_id","value":"LIC"},
			{"op":"STARTSWITH","key":"session_id","value":"s-b"}]}]}`))
		noErr(t, err)
		found, total, err := d.ListTraces(bg, db.TraceFilter{Limit: 10, Page: 1, Expr: expr})
		noErr(t, err)
		if total != 2 || !slices.Equal(traceIDs(found), []string{"e", "b"}) {
			t.Fatalf("search: %d %v", total, traceIDs(found))
		}
		scoped, _, err := d.ListTraces(bg, db.TraceFilter{Limit: 10, Page: 1, Expr: expr.WithUser("alice")})
		noErr(t, err)
		if !slices.Equal(traceIDs(scoped), []string{"e"}) {
			t.Fatalf("search as alice: %v", traceIDs(scoped))
		}
		if _, _, err := d.ListTraces(bg, db.TraceFilter{Limit: 0, Page: 1}); !errors.Is(err, db.ErrInvalidFilter) {
			t.Fatalf("limit 0: %v", err)
		}
	},
	"Traces_SessionStatsAndRetention": func(t *testing.T, d *db.DB) {
		rows := []db.Trace{traceRow("a", "alice", "s1", t0, 1), traceRow("b", "alice", "s1", t0.Add(time.Hour), 1),
			traceRow("c", "bob", "s2", t0.Add(2*time.Hour), 1), traceRow("d", "alice", "", t0.Add(3*time.Hour), 1)}
		noErr(t, d.WriteTraces(bg, rows, []db.Span{spanRow("a", "sa", "", "OK", t0), spanRow("c", "sc", "", "OK", t0)}))
		stats, total, err := d.TraceSessionStats(bg, db.TraceStatsFilter{Limit: 10, Page: 1})
		noErr(t, err)
		if total != 2 || len(stats) != 2 || stats[0].SessionID != "s2" || stats[1].SessionID != "s1" || stats[1].TotalTraces != 2 ||
			!stats[1].FirstTraceAt.Equal(t0) || !stats[1].LastTraceAt.Equal(t0.Add(time.Hour)) || stats[1].UserID != "alice" || stats[1].AgentID != "a" {
			t.Fatalf("stats %d %+v", total, stats)
		}
		mine, total, err := d.TraceSessionStats(db.WithUserScope(bg, "bob"), db.TraceStatsFilter{Limit: 10, Page: 1})
		noErr(t, err)
		if total != 1 || mine[0].SessionID != "s2" {
			t.Fatalf("bob's stats %d %+v", total, mine)
		}
		n, err := d.DeleteTracesBefore(bg, t0.Add(150*time.Minute), 1)
		noErr(t, err)
		if n != 3 {
			t.Fatalf("deleted %d", n)
		}
		left, total, err := d.ListTraces(bg, db.TraceFilter{Limit: 10, Page: 1})
		noErr(t, err)
		if total != 1 || left[0].TraceID != "d" {
			t.Fatalf("left %v", traceIDs(left))
		}
		if spans, err := d.Spans(bg, "a"); err != nil || len(spans) != 0 {
			t.Fatalf("spans of a deleted trace: %v %v", spans, err)
		}
	},
	"Traces_ManySpansInOneBatch": func(t *testing.T, d *db.DB) {
		// 150 spans in one write (several multi-row statements on SQL
		// drivers): one already stored and one repeated within the batch
		// are skipped, every other span is stored whole.
		noErr(t, d.WriteTraces(bg, []db.Trace{traceRow("m", "alice", "sess", t0, 5)}, []db.Span{spanRow("m", "s000", "", "OK", t0)}))
		spans := make([]db.Span, 0, 151)
		for i := range 150 {
			sp := spanRow("m", fmt.Sprintf("s%03d", i), "s000", "OK", t0.Add(time.Duration(i)*time.Millisecond))
			if i == 0 {
				sp.Name = "a second copy of s000, ignored"
			}
			if i == 149 {
				sp.StatusCode, sp.StatusMessage = "ERROR", "the last one"
			}
			spans = append(spans, sp)
		}
		spans = append(spans, spans[77]) // repeated within the batch
		noErr(t, d.WriteTraces(bg, []db.Trace{traceRow("m", "alice", "sess", t0, 5)}, spans))
		got, err := d.Spans(bg, "m")
		noErr(t, err)
		if len(got) != 150 {
			t.Fatalf("%d spans stored, want 150", len(got))
		}
		for i, sp := range got {
			if want := fmt.Sprintf("s%03d", i); sp.SpanID != want || !sp.StartTime.Equal(t0.Add(time.Duration(i)*time.Millisecond)) {
				t.Fatalf("span %d: %s at %s, want %s", i, sp.SpanID, sp.StartTime, want)
			}
		}
		if got[0].Name != "span s000" || got[149].StatusCode != "ERROR" || got[149].StatusMessage != "the last one" ||
			got[1].ParentSpanID != "s000" || string(got[100].Attributes) == "" {
			t.Fatalf("rows %+v / %+v / %+v", got[0], got[149], got[1])
		}
		tr, err := d.GetTrace(bg, "m", "")
		noErr(t, err)
		if tr.TotalSpans != 150 || tr.ErrorCount != 1 {
			t.Fatalf("trace counts %d spans, %d errors; want 150, 1", tr.TotalSpans, tr.ErrorCount)
		}
	},
	"Traces_BadInputIsRefused": func(t *testing.T, d *db.DB) {
		err := d.WriteTraces(bg, nil, []db.Span{{SpanID: "x", TraceID: "t", Attributes: json.RawMessage(`{`)}})
		wantErr(t, err, db.ErrInvalidRecord)
		for _, raw := range []string{`[]`, `{"op":"EQ","key":"password","value":"x"}`, `{"op":"EQ","key":"user_id"}`, `{"op":"XOR"}`,
			`{"op":"AND"}`, `{"op":"IN","key":"status","values":"OK"}`, `{"op":"GT","key":"duration_ms","value":"slow"}`, `{"op":"NOT"}`} {
			if _, err := db.ParseTraceExpr(json.RawMessage(raw)); !errors.Is(err, db.ErrInvalidTraceExpr) {
				t.Errorf("%s: %v", raw, err)
			}
		}
	},
}
