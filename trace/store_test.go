package trace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/trace"
)

// storedRun runs the calculator agent under a request (server) span with
// the store registered, and returns the run's output.
func storedRun(t *testing.T, d *db.DB) (*run.Output, *trace.Store) {
	t.Helper()
	st, err := trace.NewStore(trace.StoreConfig{DB: d, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(st))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cfg := calcConfig(t)
	trace.Instrument(&cfg, tp)
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, req := tp.Tracer("test").Start(context.Background(), "POST /agents/{agent_id}/runs", oteltrace.WithSpanKind(oteltrace.SpanKindServer))
	// The run registry is process-wide: parallel tests need their own run ids.
	runID := fmt.Sprintf("run-%d", runSeq.Add(1))
	out, err := trace.KnownRunner(a, tp, trace.RunInfo{RunID: runID, SessionID: "sess-1", UserID: "alice"}).
		Run(ctx, run.TextInput("6*7?"), agent.WithRunID(runID), agent.WithSessionID("sess-1"), agent.WithUserID("alice"))
	req.End()
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out, st
}

// TestStore_WritesTheRunAsAnAgnoTrace: the run's spans land in agno_spans
// with the run span as the root (NULL parent: the request span is not
// stored), the trace row carries the run's ids and owner, and the span
// attributes carry the keys Agno's trace views read.
func TestStore_WritesTheRunAsAnAgnoTrace(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *db.DB{"sqlite": testdbs.SQLite, "postgres": testdbs.Postgres, "mysql": testdbs.MySQL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			out, st := storedRun(t, d)
			tr, err := d.GetTrace(context.Background(), "", out.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Name != "invoke_agent Calculator" || tr.UserID != "alice" || tr.SessionID != "sess-1" || tr.AgentID != "calc" ||
				tr.Status != "OK" || tr.TotalSpans != 4 || tr.ErrorCount != 0 {
				t.Fatalf("trace %+v", tr)
			}
			spans, err := d.Spans(context.Background(), tr.TraceID)
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]int{}
			var rootID string
			for _, s := range spans {
				var a map[string]any
				if err := json.Unmarshal(s.Attributes, &a); err != nil {
					t.Fatal(err)
				}
				k, _ := a["openinference.span.kind"].(string)
				kinds[k]++
				switch k {
				case "AGENT":
					rootID = s.SpanID
					if s.ParentSpanID != "" || a["agno.run.id"] != out.RunID || a["user.id"] != "alice" || a["agno.agent.id"] != "calc" {
						t.Errorf("root span %+v %v", s, a)
					}
				case "LLM":
					if a["llm.model_name"] != "calc-model" || a["gen_ai.request.model"] != "calc-model" {
						t.Errorf("llm span %v", a)
					}
				case "TOOL":
					if a["tool.name"] != "multiply" {
						t.Errorf("tool span %v", a)
					}
				}
			}
			if kinds["AGENT"] != 1 || kinds["LLM"] != 2 || kinds["TOOL"] != 1 {
				t.Fatalf("span kinds %v", kinds)
			}
			for _, s := range spans {
				if s.SpanID != rootID && s.ParentSpanID != rootID {
					t.Errorf("span %s parent %s, want the run span %s", s.Name, s.ParentSpanID, rootID)
				}
			}
			if st.Written() != 4 || st.Dropped() != 0 {
				t.Errorf("written %d dropped %d", st.Written(), st.Dropped())
			}
		})
	}
}

// TestStore_FullQueueDropsWithoutBlocking holds the SQLite writer so that
// the store cannot write: ending spans never waits, the overflow is
// dropped and counted, and once the writer is free the queued ones land.
func TestStore_FullQueueDropsWithoutBlocking(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	ss, ok := sqlstore.FromDB(d)
	if !ok {
		t.Fatal("not an SQL store")
	}
	st, err := trace.NewStore(trace.StoreConfig{DB: d, QueueSize: 2, BatchSize: 1, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(st))
	defer tp.Shutdown(context.Background())
	tx, err := ss.SQL().BeginTx(context.Background(), nil) // the writer's only connection
	if err != nil {
		t.Fatal(err)
	}
	tr := tp.Tracer("test")
	start := time.Now()
	for range 20 {
		_, s := tr.Start(context.Background(), "work")
		s.End()
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("ending 20 spans took %v: the store blocked", el)
	}
	if st.Dropped() < 17 { // at most one in the writer and two queued
		t.Errorf("dropped %d of 20", st.Dropped())
	}
	_ = tx.Rollback()
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, total, err := d.ListTraces(context.Background(), db.TraceFilter{Limit: 100, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	if uint64(total) != st.Written() || total == 0 || st.Written()+st.Dropped() != 20 {
		t.Errorf("stored %d, written %d, dropped %d", total, st.Written(), st.Dropped())
	}
}

// TestStore_RefusesADatabaseWithoutTraces: a driver that keeps no traces
// (here the in-memory driver seen through db.Driver alone) fails at start.
func TestStore_RefusesADatabaseWithoutTraces(t *testing.T) {
	t.Parallel()
	d := db.New("plain", struct{ db.Driver }{memory.New()})
	if _, err := trace.NewStore(trace.StoreConfig{DB: d}); err == nil {
		t.Fatal("a store on the memory driver")
	}
}

// TestStore_Retention deletes traces older than the retention at start.
func TestStore_Retention(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	old := time.Now().Add(-48 * time.Hour)
	if err := d.WriteTraces(context.Background(), []db.Trace{{TraceID: "old", Name: "x", Status: "OK", StartTime: old, EndTime: old, CreatedAt: old},
		{TraceID: "new", Name: "y", Status: "OK", StartTime: time.Now(), EndTime: time.Now(), CreatedAt: time.Now()}}, nil); err != nil {
		t.Fatal(err)
	}
	st, err := trace.NewStore(trace.StoreConfig{DB: d, Retention: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	left, _, err := d.ListTraces(context.Background(), db.TraceFilter{Limit: 10, Page: 1})
	if err != nil || len(left) != 1 || left[0].TraceID != "new" {
		t.Fatalf("left %+v %v", left, err)
	}
}
