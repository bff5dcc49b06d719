package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// StoreConfig configures the trace store (NewStore).
type StoreConfig struct {
	// DB receives the spans (agno_traces, agno_spans). Required; its
	// driver must store traces (SQLite, Postgres, MySQL/MariaDB).
	DB *db.DB
	// QueueSize bounds the spans waiting to be written (default 2048, as
	// Agno's batch processor). A span that finds it full is dropped and
	// counted: runs never wait on the database.
	QueueSize int
	// BatchSize is the most spans one write carries (default 512).
	BatchSize int
	// FlushInterval is the longest a span waits for a batch (default 1s).
	FlushInterval time.Duration
	// Retention deletes traces older than it (checked every hour and at
	// start); 0 keeps them forever, as Agno does.
	Retention time.Duration
	Logger    *slog.Logger
}

// ErrStoreClosed: the store was shut down.
var ErrStoreClosed = errors.New("trace: the trace store is shut down")

// Store is an OpenTelemetry SpanProcessor that writes finished spans to
// the project database in batches, for the /traces routes, in Agno 3.0's
// shape. Request (server-kind) spans are not stored: a run span whose parent
// is one is stored as its trace's root, as is a span whose parent is
// remote, so a Python Agno finds the root with a NULL parent_span_id. The
// trace's ids (run, session, user, agent/team/workflow) come from that root.
//
// What it stores is bounded the same on every driver (MaxNameChars,
// MaxIDChars, MaxStatusMessageBytes, MaxAttributeBytes), and a batch the
// database refuses is written again trace by trace: one bad span loses at
// most its own trace, never the batch.
type Store struct {
	cfg     StoreConfig
	log     *slog.Logger
	queue   chan item
	flushes chan chan struct{}
	roots   sync.Map // span id → struct{}: stored roots in flight
	// stop orders OnEnd's queueing before Shutdown's: a span queued after
	// the writer's last drain would be counted nowhere.
	stop    sync.RWMutex
	stopped bool
	done    chan struct{}
	exited  chan struct{}
	once    sync.Once

	dropped, written, failed atomic.Uint64
}

type item struct {
	span sdktrace.ReadOnlySpan
	root bool
}

var _ sdktrace.SpanProcessor = (*Store)(nil)

// NewStore starts the store's writer (and its retention sweep). Register
// it with sdktrace.WithSpanProcessor; the provider's Shutdown flushes it.
func NewStore(cfg StoreConfig) (*Store, error) {
	if cfg.DB == nil {
		return nil, errors.New("trace: StoreConfig.DB is required")
	}
	if !cfg.DB.StoresTraces() {
		return nil, fmt.Errorf("%w: database %q (%s) cannot store traces; use SQLite, Postgres or MySQL/MariaDB",
			db.ErrUnsupportedDriver, cfg.DB.ID, cfg.DB.Driver().Dialect())
	}
	if cfg.Retention < 0 {
		return nil, errors.New("trace: StoreConfig.Retention must not be negative")
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 2048
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 512
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = time.Second
	}
	s := &Store{cfg: cfg, log: cfg.Logger, queue: make(chan item, cfg.QueueSize), flushes: make(chan chan struct{}),
		done: make(chan struct{}), exited: make(chan struct{})}
	if s.log == nil {
		s.log = slog.Default()
	}
	go s.loop()
	return s, nil
}

// Dropped counts spans dropped because the queue was full or the store was
// shut down; Written those stored; Failed those a database write lost.
func (s *Store) Dropped() uint64 { return s.dropped.Load() }
func (s *Store) Written() uint64 { return s.written.Load() }
func (s *Store) Failed() uint64  { return s.failed.Load() }

// OnStart notes whether the span will be its trace's stored root. Spans a
// sampler records without sampling them are not stored (the SDK's
// exporters, and Agno's, skip them too), so a span under one is a root.
func (s *Store) OnStart(parent context.Context, sp sdktrace.ReadWriteSpan) {
	if sp.SpanKind() == oteltrace.SpanKindServer || !sp.SpanContext().IsSampled() {
		return
	}
	p := oteltrace.SpanFromContext(parent)
	root := !p.SpanContext().IsValid() || p.SpanContext().IsRemote() || !p.SpanContext().IsSampled()
	if !root {
		if ro, ok := p.(sdktrace.ReadOnlySpan); ok && ro.SpanKind() == oteltrace.SpanKindServer {
			root = true
		}
	}
	if root {
		s.roots.Store(sp.SpanContext().SpanID(), struct{}{})
	}
}

// OnEnd queues the span without waiting: a full queue drops it.
func (s *Store) OnEnd(sp sdktrace.ReadOnlySpan) {
	if sp.SpanKind() == oteltrace.SpanKindServer || !sp.SpanContext().IsSampled() {
		return
	}
	_, root := s.roots.LoadAndDelete(sp.SpanContext().SpanID())
	s.stop.RLock()
	defer s.stop.RUnlock()
	if s.stopped {
		s.dropped.Add(1)
		return
	}
	select {
	case s.queue <- item{span: sp, root: root}:
	default:
		s.dropped.Add(1)
	}
}

// ForceFlush writes what is queued.
func (s *Store) ForceFlush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case s.flushes <- ack:
	case <-s.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown writes what is queued and stops the writer.
func (s *Store) Shutdown(ctx context.Context) error {
	s.once.Do(func() {
		s.stop.Lock()
		s.stopped = true
		s.stop.Unlock()
		close(s.done)
	})
	select {
	case <-s.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) loop() {
	defer close(s.exited)
	tick := time.NewTicker(s.cfg.FlushInterval)
	defer tick.Stop()
	var sweep <-chan time.Time
	if s.cfg.Retention > 0 {
		t := time.NewTicker(time.Hour)
		defer t.Stop()
		sweep = t.C
		s.expire()
	}
	batch := make([]item, 0, s.cfg.BatchSize)
	flush := func() {
		if len(batch) > 0 {
			s.write(batch)
			clear(batch)
			batch = batch[:0]
		}
	}
	drain := func() {
		for {
			select {
			case it := <-s.queue:
				batch = append(batch, it)
				if len(batch) == cap(batch) {
					flush()
				}
			default:
				flush()
				return
			}
		}
	}
	for {
		select {
		case it := <-s.queue:
			batch = append(batch, it)
			if len(batch) == cap(batch) {
				flush()
			}
		case <-tick.C:
			flush()
		case ack := <-s.flushes:
			drain()
			close(ack)
		case <-sweep:
			s.expire()
		case <-s.done:
			drain()
			return
		}
	}
}

// expire deletes traces past the retention.
func (s *Store) expire() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := s.cfg.DB.DeleteTracesBefore(ctx, time.Now().Add(-s.cfg.Retention), 500)
	if err != nil {
		s.log.Warn("trace store: retention", "err", err)
	} else if n > 0 {
		s.log.Debug("trace store: retention", "deleted_traces", n)
	}
}

func (s *Store) write(batch []item) {
	traces, spans := rows(batch)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.cfg.DB.WriteTraces(ctx, traces, spans)
	if err == nil {
		s.written.Add(uint64(len(spans)))
		return
	}
	if len(traces) < 2 || ctx.Err() != nil {
		s.failed.Add(uint64(len(spans)))
		s.log.Warn("trace store: spans not stored", "spans", len(spans), "err", err)
		return
	}
	// The batch is one transaction: a trace the database refuses would
	// take the others with it. Each trace is written on its own instead,
	// so only the one that fails again is lost.
	byTrace := make(map[string][]db.Span, len(traces))
	for _, sp := range spans {
		byTrace[sp.TraceID] = append(byTrace[sp.TraceID], sp)
	}
	for _, t := range traces {
		own := byTrace[t.TraceID]
		if err := s.cfg.DB.WriteTraces(ctx, []db.Trace{t}, own); err != nil {
			s.failed.Add(uint64(len(own)))
			s.log.Warn("trace store: spans not stored", "trace_id", t.TraceID, "spans", len(own), "err", err)
			continue
		}
		s.written.Add(uint64(len(own)))
	}
}

// rows converts a batch of finished spans to agno_spans rows and one
// agno_traces summary per trace.
func rows(batch []item) ([]db.Trace, []db.Span) {
	now := time.Now()
	spans := make([]db.Span, 0, len(batch))
	byTrace := map[string]*db.Trace{}
	var order []string
	for _, it := range batch {
		sp := it.span
		row := spanRow(sp, it.root, now)
		spans = append(spans, row)
		t, ok := byTrace[row.TraceID]
		if !ok {
			t = &db.Trace{TraceID: row.TraceID, Name: row.Name, Status: "OK", StartTime: row.StartTime, EndTime: row.EndTime, CreatedAt: now}
			byTrace[row.TraceID] = t
			order = append(order, row.TraceID)
		}
		if row.StartTime.Before(t.StartTime) {
			t.StartTime = row.StartTime
		}
		if row.EndTime.After(t.EndTime) {
			t.EndTime = row.EndTime
		}
		if row.StatusCode == "ERROR" {
			t.Status = "ERROR"
		}
		if it.root {
			t.Name = row.Name
			setContext(t, sp.Attributes())
		}
	}
	traces := make([]db.Trace, 0, len(order))
	for _, id := range order {
		t := byTrace[id]
		boundTrace(t)
		t.DurationMS = t.EndTime.Sub(t.StartTime).Milliseconds()
		traces = append(traces, *t)
	}
	return traces, spans
}

// setContext reads a root span's ids into its trace.
func setContext(t *db.Trace, attrs []attribute.KeyValue) {
	var id, typ string
	for _, kv := range attrs {
		switch kv.Key {
		case AttrRunID:
			t.RunID = kv.Value.String()
		case AttrConversationID:
			t.SessionID = kv.Value.String()
		case AttrUserID:
			t.UserID = kv.Value.String()
		case AttrAgentID:
			id = kv.Value.String()
		case AttrComponentType:
			typ = kv.Value.String()
		}
	}
	switch run.Type(typ) {
	case run.TypeTeam:
		t.TeamID = id
	case run.TypeWorkflow:
		t.WorkflowID = id
	default:
		t.AgentID = id
	}
}

var spanKinds = map[oteltrace.SpanKind]string{oteltrace.SpanKindInternal: "INTERNAL", oteltrace.SpanKindServer: "SERVER",
	oteltrace.SpanKindClient: "CLIENT", oteltrace.SpanKindProducer: "PRODUCER", oteltrace.SpanKindConsumer: "CONSUMER"}

func spanRow(sp sdktrace.ReadOnlySpan, root bool, now time.Time) db.Span {
	sc := sp.SpanContext()
	row := db.Span{SpanID: sc.SpanID().String(), TraceID: sc.TraceID().String(), Name: boundName(sp.Name()), SpanKind: spanKinds[sp.SpanKind()],
		StartTime: sp.StartTime(), EndTime: sp.EndTime(), CreatedAt: now}
	if row.SpanKind == "" {
		row.SpanKind = "INTERNAL"
	}
	if row.EndTime.Before(row.StartTime) {
		row.EndTime = row.StartTime
	}
	row.DurationMS = row.EndTime.Sub(row.StartTime).Milliseconds()
	if p := sp.Parent(); p.IsValid() && !root {
		row.ParentSpanID = p.SpanID().String()
	}
	switch st := sp.Status(); st.Code {
	case codes.Error:
		row.StatusCode, row.StatusMessage = "ERROR", boundText(st.Description, MaxStatusMessageBytes)
	case codes.Ok:
		row.StatusCode = "OK"
	default:
		row.StatusCode = "UNSET"
	}
	row.Attributes = attributesJSON(sp)
	return row
}

// attributesJSON is the span's attributes as a JSON object, with the
// OpenInference and agno.* keys Agno's trace views read added next to the
// GenAI ones (never replacing an attribute the span has).
func attributesJSON(sp sdktrace.ReadOnlySpan) json.RawMessage {
	attrs := sp.Attributes()
	m := make(map[string]any, len(attrs)+8)
	budget := attrBudget(MaxSpanAttributesBytes)
	for _, kv := range attrs {
		m[cleanText(string(kv.Key))] = budget.bound(kv.Value.AsInterface())
	}
	alias := func(k string, v any) {
		if _, ok := m[k]; !ok && v != nil && v != "" {
			m[k] = v
		}
	}
	op, _ := m[string(AttrOperation)].(string)
	typ, _ := m[string(AttrComponentType)].(string)
	switch op {
	case "invoke_agent":
		if typ == string(run.TypeWorkflow) {
			alias("openinference.span.kind", "CHAIN")
		} else {
			alias("openinference.span.kind", "AGENT")
		}
		alias("agno.run.id", m[string(AttrRunID)])
		alias("session.id", m[string(AttrConversationID)])
		alias("user.id", m[string(AttrUserID)])
		switch run.Type(typ) {
		case run.TypeTeam:
			alias("agno.team.id", m[string(AttrAgentID)])
		case run.TypeWorkflow:
			alias("agno.workflow.id", m[string(AttrAgentID)])
		default:
			alias("agno.agent.id", m[string(AttrAgentID)])
		}
	case "chat":
		alias("openinference.span.kind", "LLM")
		alias("llm.model_name", m[string(AttrRequestModel)])
		alias("llm.provider", m[string(AttrProvider)])
		alias("llm.token_count.prompt", m[string(AttrInputTokens)])
		alias("llm.token_count.completion", m[string(AttrOutputTokens)])
	case "execute_tool":
		alias("openinference.span.kind", "TOOL")
		alias("tool.name", m[string(AttrToolName)])
	case "retrieval":
		alias("openinference.span.kind", "RETRIEVER")
	case "execute_code":
		alias("openinference.span.kind", "TOOL")
		alias("tool.name", "execute_code")
	}
	for _, ev := range sp.Events() {
		if ev.Name != "exception" {
			continue
		}
		for _, kv := range ev.Attributes {
			if kv.Key == "exception.message" {
				alias("exception.message", budget.bound(kv.Value.String()))
			}
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}
