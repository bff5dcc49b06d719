package agent

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentryhq/agentry/offload"
	"slices"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/google/uuid"
)

// Cancellation causes, reported as the RunCancelled reason.
var (
	errStreamStopped   = errors.New("the stream consumer stopped reading")
	errCancelRequested = errors.New("cancelled by CancelRun")
)

// state is one run in progress. It is owned by one goroutine; tool goroutines
// only send results back over a channel.
type state struct {
	a *Agent
	p *prepared
	// tix is the run's tools: the agent's, plus its providers' tools; exec
	// runs their calls through the agent's tool hooks.
	tix  *toolIndex
	exec ToolHandler
	// ext holds what few runs use (see runExtras); nil until one does.
	ext    *runExtras
	ctx    context.Context
	cancel context.CancelCauseFunc
	// unregister ends the run's registration (see begin).
	unregister func()
	opts       runOptions
	out        *run.Output
	// msgs are the run's own messages (the ones stored with it).
	msgs []model.Message
	// history is the earlier runs' messages a model reads before
	// msgs[histAt] (after the system message, if any), nHistory of them:
	// the history cache's slices, shared with every request (see
	// conversation), never copied into msgs.
	history          [][]model.Message
	nHistory, histAt int32
	// segs is history with a slot before it (see sharedSegments).
	segs   [][]model.Message
	sink   sink
	req    model.Request
	schema *compiledSchema

	start time.Time
	ttft  float64
	usage model.Usage
	// call is the model call in progress; yieldChunk is onChunk, bound
	// once per run (see streamModel).
	call       modelStream
	yieldChunk func(*model.Chunk, error) bool
	details    map[string][]run.ModelMetrics
	toolCalls  int32
	callSeq    int32
	limitHit   bool
	// intermediate: the main model's deltas are RunIntermediateContent
	// (an output model writes the answer).
	intermediate  bool
	debugMessages bool
	// stopped: a tool turn ended or paused the run (see stepStop).
	stopped bool
	// joined: the run joined its session line (sessionlines.go).
	joined bool
	// sessionRead: the run read its session row (found or not); a run
	// cancelled before or during the read reads it when it saves.
	sessionRead bool
	// saved: the run was persisted (or has no DB): a stream consumer's
	// panic after it does not end it again (settle).
	saved bool

	session *db.Session
	// lineSeq is the seq of the run's session line its view of the
	// session reflects, when joined (sessionlines.go).
	lineSeq    uint64
	err        error // why the run ended in ERROR or CANCELLED
	persistErr error
	detached   detachedCtx // persist's context (see detachedCtx)
	values     runValues   // the run's context values (see begin)
}

// runExtras is the part of a run's state that few runs use: storage
// inherited from a team, a journal, memories and a summary, session state,
// iterations, a continued run's calls, fetched media, a refused start. It
// is allocated when a run first sets one of them (state.extras), so the
// state every run allocates and clears stays in a smaller size class
// (1,024 bytes with the allocator's 8-byte header, instead of 1,408).
// Not pooled: see
// docs/adr/run-state-not-pooled.md.
type runExtras struct {
	// unrecorded records the last model call in the journal (a durable run
	// with a run.LazyJournal); nil when there is nothing to record.
	unrecorded func(context.Context) error
	// off and media are the run's offloader and media storage (the
	// agent's, or inherited: see inheritStorage); nil when off.
	off   *offload.Offloader
	media media.Storage
	// remote caches the media fetched by URL for this run's model calls.
	remote map[string]remoteObject
	prior  float64 // duration of earlier legs of a continued run
	// counted is what the session's metrics already hold of this run (a
	// continued run's earlier legs, then each save's); nil: nothing.
	counted *run.SessionMetrics
	// memories are the user's memories for the system message (loaded when
	// memoriesLoaded); summary is the session summary this run wrote.
	memories       []db.Memory
	memoriesLoaded bool
	summary        json.RawMessage
	sessionState   map[string]any
	// rebased: a save started from a session row an overlapping run
	// wrote; readSession is then the row the run read (sessionlines.go).
	rebased     bool
	readSession *db.Session
	// consumerPanic is the stream consumer's panic that unwinds the run
	// (deliver); a recover that swallowed it does not end the panic.
	consumerPanic *streamPanic

	iteration int           // the current iteration (Config.Iterate)
	resume    []pendingCall // calls a continued run executes first
	// pausedApproval is the approval of the paused run being continued.
	pausedApproval string
	startErr       error // why the run did not start (see refuseStart)
}

// extras returns the run's runExtras, for writing: allocated on first use.
func (st *state) extras() *runExtras {
	if st.ext == nil {
		st.ext = &runExtras{}
	}
	return st.ext
}

// offloader and mediaStorage are the run's (nil when off).
func (st *state) offloader() *offload.Offloader {
	if st.ext == nil {
		return nil
	}
	return st.ext.off
}

// prior is the duration of a continued run's earlier legs.
func (st *state) prior() float64 {
	if st.ext == nil {
		return 0
	}
	return st.ext.prior
}

// unrecorded is the journal record of the last model call (nil: none).
func (st *state) unrecorded() func(context.Context) error {
	if st.ext == nil {
		return nil
	}
	return st.ext.unrecorded
}

// pausedApproval is the approval of the paused run being continued.
func (st *state) pausedApproval() string {
	if st.ext == nil {
		return ""
	}
	return st.ext.pausedApproval
}

// startError is why the run did not start (nil: it did).
func (st *state) startError() error {
	if st.ext == nil {
		return nil
	}
	return st.ext.startErr
}

func (st *state) mediaStorage() media.Storage {
	if st.ext == nil {
		return nil
	}
	return st.ext.media
}

// newState applies opts to a new run's state (continuing: the run continues
// a paused one), refusing the options it cannot honour.
func (a *Agent) newState(ctx context.Context, opts []RunOption, continuing bool) (*state, error) {
	p := a.prep()
	st := &state{a: a, p: p, start: time.Now()}
	for _, o := range opts {
		o(&st.opts)
	}
	o := &st.opts
	if err := a.refuse(o, continuing); err != nil {
		return nil, err
	}
	more := o.get()
	st.schema = p.schema
	if p.setErr != nil {
		return nil, fmt.Errorf("agent: tools: %w", p.setErr)
	}
	st.tix, st.exec = p.toolIndex, p.exec
	if len(a.conf().ToolProviders) > 0 {
		tools := slices.Clone(a.runTools())
		for _, tp := range a.conf().ToolProviders {
			more, err := tp.Tools(ctx)
			if err != nil {
				return nil, fmt.Errorf("agent: tools: %w", err)
			}
			tools = append(tools, more...)
		}
		var err error
		if st.tix, err = newToolIndex(tools); err != nil {
			return nil, fmt.Errorf("agent: tools: %w", err)
		}
		st.exec = a.toolHandler(st.tix.set)
	}
	if err := st.inheritStorage(); err != nil {
		return nil, fmt.Errorf("agent: tools: %w", err)
	}
	if len(more.outputSchema) > 0 {
		s, err := compileSchema(more.outputSchema, more.schemaName, runSchemaWhat, a.conf().StrictOutput)
		if err != nil {
			return nil, err
		}
		st.schema = s
	}
	runID := o.runID
	if runID == "" {
		runID = newID()
	}
	sessionID := o.sessionID
	if sessionID == "" {
		sessionID = a.conf().SessionID
	}
	if sessionID == "" {
		sessionID, o.newSession = newID(), true
	}
	userID := o.userID
	if userID == "" {
		userID = a.conf().UserID
	}
	st.out = &run.Output{
		RunID:          runID,
		SessionID:      sessionID,
		ParentRunID:    more.parentRunID,
		WorkflowStepID: more.workflowStepID,
		UserID:         userID,
		Model:          p.info.ID,
		ModelProvider:  p.info.Provider,
		Status:         run.StatusRunning,
		CreatedAt:      st.start.Unix(),
	}
	p.comp.Stamp(st.out)
	st.out.Metadata = a.runMetadata(more.metadata)
	return st, nil
}

// newID returns a random (version 4) UUID.
func newID() string {
	var u uuid.UUID
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u.String()
}

// begin registers the run in the run registry (a server that registered it
// already is joined) and derives its context. A run whose id is executing
// already does not start.
func (st *state) begin(parent context.Context) error {
	ctx, cancel := context.WithCancelCause(parent)
	ctx, unregister, err := run.DefaultRegistry().Begin(ctx, run.Registration{RunID: st.out.RunID, Component: st.p.comp, UserID: st.out.UserID}, cancel)
	if err != nil {
		cancel(nil)
		return fmt.Errorf("agent: %w", err)
	}
	if st.offloader() != nil {
		ctx = offload.WithScope(ctx, st.offloadScope())
	}
	v := &st.values
	if st.p.runContext || len(st.tix.tools) > 0 {
		v.rc = RunContext{
			AgentID: st.p.id, RunID: st.out.RunID, SessionID: st.out.SessionID,
			UserID: st.out.UserID, Dependencies: st.opts.get().dependencies,
			Offloader: st.offloader(), MediaStorage: st.mediaStorage(),
			Journal: st.opts.journal(), Attempt: st.attempt(),
		}
	}
	v.em = emitter{st: st}
	v.Context = ctx
	ctx = st.withReferenceLog(v)
	st.ctx, st.cancel, st.unregister = ctx, cancel, unregister
	st.sink.store = st.a.conf().StoreEvents
	if st.a.conf().DebugMode {
		st.sink.debug = &debugTrace{w: st.a.conf().DebugWriter}
	}
	st.intermediate = st.p.outputModel != nil
	return nil
}

// runValues is what a run adds to its context, its RunContext (when it has
// one) and its emitter, as one context node the run's state holds: the
// values cost no allocation per run and lookups of other keys (the user
// scope, read on every save) walk a shorter chain.
type runValues struct {
	context.Context
	rc RunContext // set when RunID is (a run's id is never empty)
	em emitter
}

func (v *runValues) Value(key any) any {
	switch key.(type) {
	case runContextKey:
		if v.rc.RunID != "" {
			return &v.rc
		}
	case emitterKey:
		return &v.em
	}
	return v.Context.Value(key)
}

// end unregisters the run once it returned (and is stored).
func (st *state) end() {
	st.leaveLine()
	st.cancel(context.Canceled)
	st.unregister()
}

// CancelRun cancels a run of this agent (of its component: a team's leader
// cancels the team's runs) in progress in this process, whoever started it.
// It reports whether the run was found; the run ends as CANCELLED and is
// persisted.
func (a *Agent) CancelRun(runID string) bool {
	return run.CancelRun(run.DefaultRegistry(), a.Component(), runID, errCancelRequested)
}
