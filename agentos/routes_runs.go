package agentos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/groupcommit"
	"github.com/agentryhq/agentry/internal/sessionline"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// agentTarget resolves {agent_id} for the run routes.
func (s *Server) agentTarget(id string) (runTarget, bool) {
	a, ok := s.agents[id]
	return a, ok
}

// runStart is a validated run request ready to execute.
type runStart struct {
	agent     runTarget
	runID     string
	sessionID string
	userID    string
	input     run.Input
	metadata  map[string]any
	opts      []agent.RunOption
	// pending is the stored PENDING row of a background run.
	pending *run.Output
}

// startRun is POST …/runs for any run target. Nothing is stored until the
// request is fully decoded and validated.
func (s *Server) startRun(w http.ResponseWriter, r *http.Request, a runTarget) error {
	req, err := decodeRunForm(r, formLimits{})
	if err != nil {
		return err
	}
	if err := checkOutputSchema(req.OutputSchema); err != nil {
		return err
	}
	ctx := r.Context()
	if req.Version != 0 {
		if a, err = s.targetAtVersion(r, a, req.Version); err != nil {
			return err
		}
	}
	if err := checkRunOverrides(a, req); err != nil {
		return err
	}
	in, err := runInput(req)
	if err != nil {
		return err
	}
	user := runUser(ctx, req.UserID)
	st := &runStart{agent: a, runID: uuid.NewString(), sessionID: runSession(ctx, req.SessionID), userID: user.id,
		input: in, metadata: req.Metadata}
	newSession := st.sessionID == ""
	if newSession {
		st.sessionID = uuid.NewString()
	} else if err := s.checkSessionOwner(ctx, a, st.sessionID, user); err != nil {
		return err
	}
	if req.Background && req.IdempotencyKey != "" {
		st.runID = idempotentRunID(flightKey(a), st.userID, req.IdempotencyKey)
		st.metadata = maps.Clone(st.metadata)
		if st.metadata == nil {
			st.metadata = map[string]any{}
		}
		st.metadata["idempotency_key"] = req.IdempotencyKey
	}
	session := agent.WithSessionID(st.sessionID)
	if newSession && !req.Background {
		// The id was generated just above, so the agent need not look it up.
		// A background run's session is stored (PENDING row) before it runs.
		session = agent.WithNewSession(st.sessionID)
	}
	st.opts = []agent.RunOption{agent.WithRunID(st.runID), session, agent.WithUserID(st.userID)}
	if req.SessionState != nil {
		st.opts = append(st.opts, agent.WithSessionState(req.SessionState))
	}
	if req.Dependencies != nil {
		st.opts = append(st.opts, agent.WithDependencies(req.Dependencies))
	}
	if st.metadata != nil {
		st.opts = append(st.opts, agent.WithMetadata(st.metadata))
	}
	if len(req.OutputSchema) > 0 {
		st.opts = append(st.opts, agent.WithOutputSchema(req.OutputSchema, ""))
	}
	st.opts = append(st.opts, runOverrides(req.KnowledgeFilters, req.AddHistoryToContext)...)
	switch {
	case req.Background:
		// A background run answers 202, or streams its stored events when
		// stream=true was sent (Agno streams by default; we keep 202 then).
		if st.agent.DB() == nil {
			// Agno's status and words.
			return errorf(http.StatusBadRequest, "Background execution requires a database to be configured on the %s", a.Component().Type)
		}
		if err := s.checkBackgroundStream(r, a, req); err != nil {
			return err
		}
		if s.queue != nil {
			return s.enqueueBackground(w, r, st, req)
		}
		return s.startBackground(w, r, st, req)
	case req.Stream:
		return s.streamRun(w, r, st)
	default:
		return s.runSync(w, r, st)
	}
}

// formFields name the run form's fields after the run options they become,
// for the messages of refused options.
var formFields = map[string]string{"WithOutputSchema": "output_schema", "WithKnowledgeFilters": "knowledge_filters",
	"WithAddHistoryToContext": "add_history_to_context"}

// checkRunOverrides refuses, before anything runs or is stored (a
// background run's PENDING row, a foreground run's lease), the per-run
// fields a target cannot apply: the target (an agent, a team or a
// workflow: an agent.OptionChecker) is asked whether it honours the options
// the fields become, with the same switch its Run refuses them with, so
// that the two cannot disagree (an agent without a knowledge base refuses
// knowledge_filters, one without a database add_history_to_context=true).
func checkRunOverrides(t runTarget, req *runRequest) error {
	oc, ok := t.(agent.OptionChecker)
	if !ok {
		return nil
	}
	var opts []agent.RunOption
	if len(req.OutputSchema) > 0 {
		opts = append(opts, agent.WithOutputSchema(req.OutputSchema, ""))
	}
	opts = append(opts, runOverrides(req.KnowledgeFilters, req.AddHistoryToContext)...)
	err := oc.CheckOptions(opts...)
	var ue *agent.UnsupportedOptionError
	switch {
	case errors.As(err, &ue):
		c := t.Component()
		return errorf(http.StatusUnprocessableEntity, "field %q is not supported for %s %s: %s", cmp.Or(formFields[ue.Option], ue.Option), c.Type, c.ID, ue.Reason)
	case errors.Is(err, agent.ErrInvalidSchema):
		// A schema checkOutputSchema took that this agent cannot send:
		// one with no strict form, for an agent with strict_output.
		return &httpError{Status: http.StatusUnprocessableEntity, Err: err,
			Detail: schemaNames.Replace(strings.TrimPrefix(err.Error(), agent.ErrInvalidSchema.Error()+": "))}
	}
	return err
}

// schemaNames renames the Go options an agent's schema errors name to the
// run form's and the config's fields.
var schemaNames = strings.NewReplacer("the run's output schema (WithOutputSchema)", "output_schema",
	"(StrictOutput)", "(the agent's strict_output)")

// runOverrides are the run options of the per-run overrides of the run form
// (and of a queued run's payload).
func runOverrides(filters map[string]any, history *bool) []agent.RunOption {
	var opts []agent.RunOption
	if filters != nil {
		opts = append(opts, agent.WithKnowledgeFilters(filters))
	}
	if history != nil {
		opts = append(opts, agent.WithAddHistoryToContext(*history))
	}
	return opts
}

// targetAtVersion is the run form's version: config version v of t, which
// must be a stored component (the config file's components have no
// versions). A version that does not exist, or a draft the caller may not
// read (as GET …/configs/{version}), is 404.
func (s *Server) targetAtVersion(r *http.Request, t runTarget, v int) (runTarget, error) {
	ctx := r.Context()
	c := t.Component()
	kind := string(c.Type)
	if s.configured(kind, c.ID) {
		return nil, errorf(http.StatusUnprocessableEntity, "field \"version\" is not supported for %s %s: it comes from the server's config file, which has no versions", kind, c.ID)
	}
	notFound := errorf(http.StatusNotFound, "Version %d of %s %s not found", v, kind, c.ID)
	d := s.dbs[0] // t is a stored component: the registry is there
	comp, err := d.GetComponent(ctx, c.ID, false)
	if err != nil {
		return nil, err
	}
	cfg, err := d.GetConfig(ctx, c.ID, v)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, notFound
	case err != nil:
		return nil, err
	case cfg.Stage != db.StagePublished && !mayReadDrafts(r, comp):
		return nil, notFound
	}
	vt, err := s.storedTargetAt(ctx, kind, c.ID, v)
	if errors.Is(err, db.ErrNotFound) {
		return nil, notFound
	}
	return vt, err
}

// runInput turns the message and uploaded files into the run's input; files
// are sorted into images, audio, videos and files as Agno sorts them
// (classifyUpload: a type it does not take is 400), and an empty one is
// left out, as Agno leaves it. Their bytes are kept in the run (a media
// store replaces them by references later).
func runInput(req *runRequest) (run.Input, error) {
	in := run.Input{InputContent: req.Message}
	for _, f := range req.Files {
		kind, mimeType, format, err := classifyUpload(f)
		if err != nil {
			return run.Input{}, err
		}
		if len(f.Content) == 0 {
			continue
		}
		m := run.Media{ID: uuid.NewString(), Content: f.Content, MIMEType: mimeType, Format: format, Name: f.Filename, Size: int64(len(f.Content))}
		switch kind {
		case uploadImage:
			in.Images = append(in.Images, m)
		case uploadAudio:
			in.Audio = append(in.Audio, m)
		case uploadVideo:
			in.Videos = append(in.Videos, m)
		default:
			in.Files = append(in.Files, m)
		}
	}
	in.Images = append(in.Images, req.Images...)
	in.Audio = append(in.Audio, req.Audio...)
	in.Videos = append(in.Videos, req.Videos...)
	in.Files = append(in.Files, req.InputFiles...)
	return in, nil
}

// checkSessionOwner refuses, before the run starts, a run that could never
// be stored because its session belongs to another user: a user-scoped
// caller gets 404 (the session does not exist for it); an unscoped caller
// that names a user other than the session's owner gets 409 (it may act for
// any user, so the session's existence is no secret). An unscoped caller
// that names no user runs as the session's owner.
func (s *Server) checkSessionOwner(ctx context.Context, a runTarget, sessionID string, user actingUser) error {
	d := a.DB()
	if d == nil {
		return nil
	}
	if !user.scoped {
		if user.anyone() {
			return nil
		}
		sess, err := d.GetSession(ctx, sessionID)
		switch {
		case errors.Is(err, db.ErrNotFound):
			return nil
		case err != nil:
			return err
		case sess.UserID != "" && !user.owns(sess.UserID):
			return errorf(http.StatusConflict, "session %s belongs to another user: run with its user_id, or use another session_id", sessionID)
		}
		return nil
	}
	_, err := d.GetSession(ctx, sessionID)
	if !errors.Is(err, db.ErrNotFound) {
		return err
	}
	// Missing for this user: a new session unless it exists for someone else.
	// The unscoped probe only learns existence; nothing of the row is returned.
	_, err = d.GetSession(context.Background(), sessionID)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	return errorf(http.StatusNotFound, "Session with ID %s not found", sessionID)
}

// idempotencyNS namespaces idempotent run ids.
var idempotencyNS = uuid.MustParse("6f1b7c52-2f0e-4c1e-9d1a-6a3c2b8e9f10")

// idempotentRunID derives the run id of an idempotent background run from the
// agent, the user and the key, so a duplicate finds the first run by id (in
// this process and, through the database, in others).
func idempotentRunID(agentID, userID, key string) string {
	return uuid.NewSHA1(idempotencyNS, []byte(agentID+"\x00"+userID+"\x00"+key)).String()
}

// beginErr maps runner refusals to HTTP errors.
func beginErr(err error) error {
	switch {
	case errors.Is(err, errDraining):
		return &httpError{Status: http.StatusServiceUnavailable, Detail: "the server is shutting down; retry on another instance", Err: err}
	case errors.Is(err, errQueueFull):
		return &httpError{Status: http.StatusTooManyRequests, Detail: "too many background runs are queued; retry later", Err: err}
	case errors.Is(err, errRunInFlight):
		return &httpError{Status: http.StatusConflict, Detail: "the run is already executing", Err: err}
	}
	return err
}

// streamRun executes the run and streams its events. Once the stream started,
// failures are events on the 200 response; a client that goes away cancels the
// run (its context is the request's), which is stored CANCELLED.
func (s *Server) streamRun(w http.ResponseWriter, r *http.Request, st *runStart) error {
	// A streamed run's writes stay out of SQLite's group commit: see
	// groupcommit.Alone.
	ctx, f, err := s.runs.beginShown(groupcommit.Alone(r.Context()), st.runID, st.agent.Component(), st.userID, false, runningOutput(st))
	if err != nil {
		return beginErr(err)
	}
	defer s.runs.end(st.runID, f)
	ctx, done, err := s.leaseForeground(ctx, st)
	if err != nil {
		return err
	}
	if s.queue != nil {
		// Only a lease records how the run ended; without a durable queue
		// done does nothing, and reading the run back would cost every
		// streamed run a database read for nothing.
		defer func() { done(s.storedStatus(ctx, st)) }()
	}
	return s.writeStream(ctx, w, r, st.agent, st.runID, st.sessionID, s.observed(st.agent, st.runID, st.sessionID, st.userID).Stream(ctx, st.input, st.opts...))
}

// leaseForeground gives a streamed or synchronous run a lease row on the
// durable queue (when there is one), so that a crash of this process does
// not leave it RUNNING: another replica (or this node at restart) marks it
// ERROR once the lease expires. done records how it ended.
func (s *Server) leaseForeground(ctx context.Context, st *runStart) (context.Context, func(run.Status), error) {
	if s.queue == nil {
		return ctx, func(run.Status) {}, nil
	}
	c := st.agent.Component()
	return s.queue.Hold(ctx, &queue.Job{ID: st.runID, ComponentType: string(c.Type), ComponentID: c.ID, SessionID: st.sessionID, UserID: st.userID})
}

// storedStatus is a finished foreground run's stored status (ERROR when it
// was not stored).
func (s *Server) storedStatus(ctx context.Context, st *runStart) run.Status {
	if d := st.agent.DB(); d != nil {
		if row, err := d.GetRun(context.WithoutCancel(ctx), st.runID); err == nil {
			return row.Status
		}
	}
	return run.StatusError
}

// writeStream copies a run's events to the response as SSE. An error before
// the first event (the run could not start) is an HTTP error: 503 when the
// database failed. An error after it means the run was not stored; the
// run already ended its stream with a StorageError event then, and one is
// added only when no terminal event of the run was sent.
func (s *Server) writeStream(ctx context.Context, w http.ResponseWriter, r *http.Request, a runTarget, runID, sessionID string, events func(func(run.Event, error) bool)) error {
	sse := newSSEWriter(w)
	// ctx is the run's: once it is cancelled, a client that takes none of
	// the last frames (RunCancelled) within half the cancel route's wait is
	// gone, and the run ends (its cancel is answered within that wait).
	defer sse.interruptible(ctx, s.cancelTimeout/2)()
	ended := false
	for ev, err := range events {
		if err != nil {
			if !sse.Started() {
				return runErr(err)
			}
			s.log.ErrorContext(r.Context(), "run not stored", "request_id", requestID(r.Context()), "run_id", runID, "err", err)
			if !ended {
				_ = sse.WriteEvent(storageErrorEvent(a, runID, sessionID))
			}
			return nil
		}
		ended = ended || (ev.RunID == runID && isTerminal(ev.Event))
		if err := sse.WriteEvent(&ev); err != nil {
			// The client is gone: stopping the range cancels the run, which the
			// agent stores as CANCELLED before the loop returns.
			s.log.InfoContext(r.Context(), "client closed stream", "request_id", requestID(r.Context()), "run_id", runID, "err", err)
			return nil
		}
	}
	return nil
}

// isTerminal reports whether t ends an agent, team or workflow run.
func isTerminal(t run.EventType) bool { return run.IsTerminal(t) }

// runningOutput is the RUNNING snapshot of a run the server executes, shown
// by GET /sessions/{id}/runs until the run's session is stored.
func runningOutput(st *runStart) *run.Output {
	out := pendingOutput(st.agent, st)
	out.Status = run.StatusRunning
	return out
}

// runErr maps errors of runs that could not start.
func runErr(err error) error {
	switch {
	case errors.Is(err, run.ErrNotContinuable):
		return &httpError{Status: http.StatusConflict, Detail: run.ErrNotContinuable.Error(), Err: err}
	case errors.Is(err, agent.ErrRequirementUnresolved):
		return &httpError{Status: http.StatusUnprocessableEntity, Detail: strings.TrimPrefix(err.Error(), "agent: "), Err: err}
	}
	return err
}

// runSync executes the run and answers with it (stream=false). A run that
// started is answered 200 whatever its status (COMPLETED, PAUSED, ERROR,
// CANCELLED); only a run that could not start is an HTTP error.
func (s *Server) runSync(w http.ResponseWriter, r *http.Request, st *runStart) error {
	ctx, f, err := s.runs.beginShown(r.Context(), st.runID, st.agent.Component(), st.userID, false, runningOutput(st))
	if err != nil {
		return beginErr(err)
	}
	defer s.runs.end(st.runID, f)
	ctx, done, err := s.leaseForeground(ctx, st)
	if err != nil {
		return err
	}
	out, err := s.observed(st.agent, st.runID, st.sessionID, st.userID).Run(ctx, st.input, st.opts...)
	status := run.StatusError
	if out != nil && !errors.Is(err, agent.ErrStorage) {
		status = out.Status
	}
	done(status)
	return s.answerRun(w, r, out, err)
}

// answerRun answers a synchronous run: 200 with the run once it is stored,
// 503 when it could not start or could not be stored (the client may retry:
// nothing of it was kept).
func (s *Server) answerRun(w http.ResponseWriter, r *http.Request, out *run.Output, err error) error {
	if out == nil {
		return runErr(err)
	}
	if errors.Is(err, agent.ErrStorage) {
		s.log.ErrorContext(r.Context(), "run not stored", "request_id", requestID(r.Context()), "path", r.URL.Path,
			"run_id", out.RunID, "status", out.Status, "err", err)
		writeError(w, http.StatusServiceUnavailable, detailRunNotStored)
		return nil
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// backgroundAccepted is the 202 body of a background run.
type backgroundAccepted struct {
	RunID     string     `json:"run_id"`
	SessionID string     `json:"session_id"`
	Status    run.Status `json:"status"`
}

// startBackground stores the session (if new) and a PENDING run row, answers
// 202 and executes the run on a background worker. With an idempotency key the
// run id is derived from the key, and a duplicate answers 202 with the run the
// first request created.
func (s *Server) startBackground(w http.ResponseWriter, r *http.Request, st *runStart, req *runRequest) error {
	idempotent := req.IdempotencyKey != ""
	d := st.agent.DB()
	// The submission is decoded: accepting it no longer depends on the
	// client staying connected (a half-closed client still reads the 202).
	// The run outlives the request too: it keeps the request's values (user
	// scope, principal) but not its cancellation.
	ctx := context.WithoutCancel(r.Context())
	if idempotent {
		mu := s.runs.idemLock(st.runID)
		mu.Lock()
		defer mu.Unlock()
		row, err := d.GetRun(ctx, st.runID)
		switch {
		case err == nil:
			mu.Unlock()
			defer mu.Lock() // the deferred Unlock above
			return s.acceptBackground(w, r, st.agent, row, req.streams())
		case !errors.Is(err, db.ErrNotFound):
			return err
		}
	}
	rctx, f, err := s.runs.begin(ctx, st.runID, st.agent.Component(), st.userID, true)
	if err != nil {
		return beginErr(err)
	}
	if err := s.storePending(ctx, d, st); err != nil {
		s.runs.end(st.runID, f)
		return err
	}
	go s.executeBackground(rctx, f, st, time.Now())
	if req.streams() {
		if idempotent {
			s.runs.idemLock(st.runID).Unlock()
			defer s.runs.idemLock(st.runID).Lock() // the deferred Unlock above
		}
		return s.streamStored(w, r, st.agent, &db.Run{RunID: st.runID, SessionID: st.sessionID, Status: run.StatusPending}, -1)
	}
	writeJSON(w, http.StatusAccepted, backgroundAccepted{RunID: st.runID, SessionID: st.sessionID, Status: run.StatusPending})
	return nil
}

// storePending writes the session (runs reference it) and the PENDING row.
func (s *Server) storePending(ctx context.Context, d *db.DB, st *runStart) error {
	a := st.agent
	// Looked for and created in a turn of the session's line: a run of the
	// session that created it here in between is not written over.
	err := sessionline.Default().Update(sessionline.Key{DB: d, ID: st.sessionID}, func() (*db.Session, error) {
		_, err := d.GetSession(ctx, st.sessionID)
		if !errors.Is(err, db.ErrNotFound) {
			return nil, err
		}
		saved, err := d.UpsertSession(ctx, newSession(a, st.sessionID, st.userID))
		if errors.Is(err, db.ErrNotFound) {
			// The id belongs to another user's session.
			return nil, errorf(http.StatusNotFound, "Session with ID %s not found", st.sessionID)
		}
		return saved, err
	})
	if err != nil {
		return err
	}
	out := pendingOutput(a, st)
	row, err := db.RunFromOutput(out)
	if err != nil {
		return err
	}
	st.pending = out
	_, err = d.UpsertRun(ctx, row)
	return err
}

// executeBackground waits for a worker slot, marks the run RUNNING and runs
// it. A run cancelled while it waits (cancel route, shutdown) still goes
// through the agent, which stores it CANCELLED without calling the model.
func (s *Server) executeBackground(ctx context.Context, f *flight, st *runStart, accepted time.Time) {
	defer s.runs.end(st.runID, f)
	defer func() {
		// No handler recovers here: a panicking run must not take the server down.
		if v := recover(); v != nil {
			s.log.ErrorContext(ctx, "panic in background run", "run_id", st.runID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			s.markPanicked(ctx, st)
		}
	}()
	select {
	case s.runs.slots <- struct{}{}:
		defer func() { <-s.runs.slots }()
	case <-ctx.Done():
	}
	s.observeQueueWait("background", accepted)
	if ctx.Err() == nil {
		s.markRunning(ctx, st)
	}
	add, stop := s.recordEvents(ctx, st.agent, st.runID, 1)
	defer stop()
	out, err := runRecorded(ctx, s.observed(st.agent, st.runID, st.sessionID, st.userID), st.runID, st.input, st.opts, add)
	if err != nil && (out == nil || (out.Status != run.StatusError && out.Status != run.StatusCancelled)) {
		s.log.ErrorContext(ctx, "background run failed", "run_id", st.runID, "err", err)
	}
	if out == nil && err != nil {
		s.markFailed(ctx, st)
	}
}

// markFailed stores a background run that could not start as ERROR (its
// session or history could not be read), or CANCELLED when it was cancelled
// before it started, so that pollers do not wait on a RUNNING row forever.
// It is best effort: the database may still fail.
func (s *Server) markFailed(ctx context.Context, st *runStart) {
	out := *st.pending
	if cause := context.Cause(ctx); cause != nil {
		out.Status = run.StatusCancelled
		out.Content = fmt.Sprintf("run %s was cancelled: %s", out.RunID, cause)
	} else {
		out.Status = run.StatusError
		out.Content = "the run could not start: the database was unavailable"
	}
	out.ContentType = "str"
	out.UpdatedAt = time.Now().Unix()
	row, err := db.RunFromOutput(&out)
	if err == nil {
		_, err = st.agent.DB().UpsertRun(context.WithoutCancel(ctx), row)
	}
	if err != nil {
		s.log.WarnContext(ctx, "background run: mark failed", "run_id", st.runID, "err", err)
	}
}

// markPanicked stores ERROR a background run whose execution panicked:
// nothing executes it any more, and left RUNNING (or PENDING) its pollers
// would wait for ever. The row as the run last stored it is kept, with the
// status and a content that says what happened (never the panic's value,
// which is for the logs). Best effort, as markFailed.
func (s *Server) markPanicked(ctx context.Context, st *runStart) {
	ctx = context.WithoutCancel(ctx)
	d := st.agent.DB()
	out := st.pending
	if row, err := d.GetRun(ctx, st.runID); err == nil {
		if finalStatus(row.Status) {
			return
		}
		if stored, err := row.Output(); err == nil {
			out = stored
		}
	}
	failed := *out
	failed.Status = run.StatusError
	failed.Content, failed.ContentType = fmt.Sprintf("run %s failed: an internal error stopped it", st.runID), "str"
	failed.UpdatedAt = time.Now().Unix()
	row, err := db.RunFromOutput(&failed)
	if err == nil {
		_, err = d.UpsertRun(ctx, row)
	}
	if err != nil {
		s.log.WarnContext(ctx, "background run: mark failed after a panic", "run_id", st.runID, "err", err)
	}
}

// markRunning moves the stored row from PENDING to RUNNING so readers see the
// run has started.
func (s *Server) markRunning(ctx context.Context, st *runStart) {
	out := *st.pending
	out.Status = run.StatusRunning
	row, err := db.RunFromOutput(&out)
	if err == nil {
		_, err = st.agent.DB().UpsertRun(ctx, row)
	}
	if err != nil {
		s.log.WarnContext(ctx, "background run: mark running", "run_id", st.runID, "err", err)
	}
}
