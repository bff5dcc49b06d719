package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sessionline"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// jobPayload is what a durable background run's job carries to rebuild the
// run in any process: the decoded request, not the HTTP form.
type jobPayload struct {
	Input        run.Input       `json:"input"`
	SessionState map[string]any  `json:"session_state,omitempty"`
	Dependencies map[string]any  `json:"dependencies,omitempty"`
	Metadata     map[string]any  `json:"metadata,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// KnowledgeFilters and AddHistoryToContext are the run form's per-run
	// overrides.
	KnowledgeFilters    map[string]any `json:"knowledge_filters,omitempty"`
	AddHistoryToContext *bool          `json:"add_history_to_context,omitempty"`
	// ComponentVersion is the config version of a stored component when
	// the run was queued: the worker builds that version, not whatever is
	// current when it runs (0: a component of the config file).
	ComponentVersion int `json:"component_version,omitempty"`
}

// openQueue opens the durable queue on the default database when cfg.Queue
// is set. Every component that stores runs must use that database: a run's
// row and its job are written in one transaction.
func (s *Server) openQueue(ctx context.Context) error {
	if s.cfg.Queue == nil {
		return nil
	}
	if len(s.dbs) == 0 {
		return errors.New("agentos: the durable queue needs a database (queue.durable: true)")
	}
	qdb := s.dbs[0]
	for _, t := range s.targets() {
		if d := t.DB(); d != nil && d != qdb {
			return fmt.Errorf("agentos: %s %s stores its runs in database %q, but the durable queue is on %q: "+
				"give every component the same database, or set queue.durable: false", t.Component().Type, t.Component().ID, d.ID, qdb.ID)
		}
	}
	qc := *s.cfg.Queue
	if qc.Logger == nil {
		qc.Logger = s.log
	}
	// One SQLite file has one process (the driver locks it): every running
	// job found at start is an orphan of a crash and resumes at once.
	qc.SingleNode = qc.SingleNode || qdb.Driver().Dialect() == "sqlite"
	q, err := queue.Open(ctx, qdb, qc, s.executeJob)
	if err != nil {
		return fmt.Errorf("agentos: durable queue: %w", err)
	}
	s.queue = q
	return nil
}

// targets lists every run target the server serves.
func (s *Server) targets() []runTarget {
	var ts []runTarget
	for _, a := range s.agents {
		ts = append(ts, a)
	}
	for _, t := range s.teams {
		ts = append(ts, t)
	}
	for _, w := range s.workflows {
		ts = append(ts, w)
	}
	return ts
}

// targetOf resolves a job's component.
func (s *Server) targetOf(kind, id string) (runTarget, bool) {
	switch run.Type(kind) {
	case run.TypeAgent:
		return s.agentTarget(id)
	case run.TypeTeam:
		return s.teamTarget(id)
	case run.TypeWorkflow:
		return s.workflowTarget(id)
	}
	return nil, false
}

// executeJob is the queue's handler: it rebuilds the run from its job and
// executes it, registered in the run registry like every run of the server.
// A run that ends (any stored status) is the job's outcome; a run that
// could not start or be stored is retried.
func (s *Server) executeJob(ctx context.Context, j *queue.Job) (run.Status, error) {
	var p jobPayload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return "", queue.Permanent(fmt.Errorf("the job's payload no longer decodes: %w", err))
	}
	t, ok := s.targetOf(j.ComponentType, j.ComponentID)
	if !ok {
		// A stored component (server_components.go), at the version the
		// run was queued with.
		st, err := s.storedTargetAt(ctx, j.ComponentType, j.ComponentID, p.ComponentVersion)
		if errors.Is(err, db.ErrNotFound) {
			return "", queue.Permanent(fmt.Errorf("%s %s no longer exists on this server", j.ComponentType, j.ComponentID))
		}
		if err != nil {
			return "", err
		}
		t = st
	}
	// A run that ended before its job could record it (the process died in
	// between) is not handed here again: the queue's claim read its row.
	opts := []agent.RunOption{agent.WithRunID(j.ID), agent.WithSessionID(j.SessionID), agent.WithUserID(j.UserID)}
	if p.SessionState != nil {
		opts = append(opts, agent.WithSessionState(p.SessionState))
	}
	if p.Dependencies != nil {
		opts = append(opts, agent.WithDependencies(p.Dependencies))
	}
	if p.Metadata != nil {
		opts = append(opts, agent.WithMetadata(p.Metadata))
	}
	if len(p.OutputSchema) > 0 {
		opts = append(opts, agent.WithOutputSchema(p.OutputSchema, ""))
	}
	opts = append(opts, runOverrides(p.KnowledgeFilters, p.AddHistoryToContext)...)
	opts = append(opts, s.journalOpts(j)...)
	rctx, f, err := s.runs.begin(ctx, j.ID, t.Component(), j.UserID, false)
	if err != nil {
		return "", err
	}
	defer s.runs.end(j.ID, f)
	s.observeQueueWait("durable", time.Unix(max(j.AvailableAt, j.CreatedAt), 0))
	// The attempt's events go to the event log (fenced on the attempt, as
	// its run writes are) for streaming on any replica.
	add, stop := s.recordEvents(rctx, t, j.ID, j.Attempt)
	defer stop()
	out, err := runRecorded(rctx, s.observed(t, j.ID, j.SessionID, j.UserID), j.ID, p.Input, opts, add)
	if out != nil && (out.Status != run.StatusRunning && out.Status != run.StatusPending) && !errors.Is(err, agent.ErrStorage) && !errors.Is(err, run.ErrFenced) {
		return out.Status, nil
	}
	if err == nil {
		err = fmt.Errorf("the run ended %s", out.Status)
	}
	return "", err
}

// journalOpts make the job's run durable step by step: each model and tool
// call is recorded in the database's step journal by this attempt, and a
// resumed run replays what was recorded (the queue clears the journal when
// the job is final).
func (s *Server) journalOpts(j *queue.Job) []agent.RunOption {
	if jr := s.queue.Journal(); jr != nil {
		return []agent.RunOption{agent.WithJournal(jr, j.Attempt)}
	}
	return nil
}

// enqueueBackground stores the run's PENDING row (and its new session) with
// its job in one transaction and answers 202; a repeated Idempotency-Key
// answers 202 with the first run.
//
// The first run is read after the enqueue found its key. Deleting its
// session in between deletes the run and frees the key, so the request is
// enqueued once more and runs anew, as it would have a moment later
// (docs/adr/session-delete-media.md). A key that still names a run that
// no longer exists (a run deleted on its own keeps its key) answers 409:
// the key is taken, and there is no run to answer with.
func (s *Server) enqueueBackground(w http.ResponseWriter, r *http.Request, st *runStart, req *runRequest) error {
	d := st.agent.DB()
	ctx := r.Context()
	for try := 1; ; try++ {
		runID, dup, err := s.enqueueRun(ctx, st, req)
		if err != nil {
			return err
		}
		if !dup && !req.streams() {
			writeJSON(w, http.StatusAccepted, backgroundAccepted{RunID: st.runID, SessionID: st.sessionID, Status: run.StatusPending})
			return nil
		}
		if f := s.afterRepeatedKey.Load(); dup && f != nil {
			(*f)(runID)
		}
		first, err := d.GetRun(ctx, runID)
		switch {
		case errors.Is(err, db.ErrNotFound) && dup && try == 1:
			continue
		case errors.Is(err, db.ErrNotFound) && dup:
			return &httpError{Status: http.StatusConflict, Err: err,
				Detail: fmt.Sprintf("the Idempotency-Key names run %s, which no longer exists; send the request with a new key", runID)}
		case err != nil:
			return err
		}
		return s.acceptBackground(w, r, st.agent, first, req.streams())
	}
}

// enqueueRun is enqueueBackground's enqueue: the run's id, or the id of
// the first run of a repeated Idempotency-Key (dup true).
func (s *Server) enqueueRun(ctx context.Context, st *runStart, req *runRequest) (runID string, dup bool, err error) {
	d := st.agent.DB()
	out := pendingOutput(st.agent, st)
	row, err := db.RunFromOutput(out)
	if err != nil {
		return "", false, err
	}
	version, _ := s.stored.versionOf(st.agent)
	payload, err := json.Marshal(jobPayload{Input: st.input, SessionState: req.SessionState, Dependencies: req.Dependencies,
		Metadata: st.metadata, OutputSchema: req.OutputSchema, KnowledgeFilters: req.KnowledgeFilters,
		AddHistoryToContext: req.AddHistoryToContext, ComponentVersion: version})
	if err != nil {
		return "", false, err
	}
	c := st.agent.Component()
	job := &queue.Job{ID: st.runID, ComponentType: string(c.Type), ComponentID: c.ID, SessionID: st.sessionID, UserID: st.userID,
		Payload: payload, IdempotencyKey: req.IdempotencyKey}
	// Looked for and created (with the job) in a turn of the session's
	// line: a run of the session that created it here in between is not
	// written over.
	err = sessionline.Default().Update(sessionline.Key{DB: d, ID: st.sessionID}, func() (*db.Session, error) {
		var sess *db.Session
		if _, err := d.GetSession(ctx, st.sessionID); errors.Is(err, db.ErrNotFound) {
			sess = newSession(st.agent, st.sessionID, st.userID)
		} else if err != nil {
			return nil, err
		}
		var err error
		runID, dup, err = s.queue.Enqueue(ctx, sess, row, job)
		return nil, err
	})
	switch {
	case errors.Is(err, queue.ErrQueueFull):
		return "", false, &httpError{Status: http.StatusTooManyRequests, Detail: "too many background runs are queued; retry later", Err: err}
	case errors.Is(err, queue.ErrKeyTooLong):
		return "", false, &httpError{Status: http.StatusUnprocessableEntity, Detail: err.Error(), Err: err}
	case errors.Is(err, db.ErrNotFound):
		return "", false, errorf(http.StatusNotFound, "Session with ID %s not found", st.sessionID)
	}
	return runID, dup, err
}

// streams reports whether a background run's answer is its event stream
// (stream=true sent with background=true) rather than 202.
func (req *runRequest) streams() bool { return req.Background && req.Stream && req.StreamSent }

// acceptBackground answers the first run of a repeated Idempotency-Key:
// 202 with the run, or, when the request asked to stream, the run's
// events (the same stream the resume route gives) after the one its
// Last-Event-ID names, from the first without one. The stream's frames
// carry ids, and an SSE client whose connection dropped sends the same
// request again with the last id it received: starting again from the
// first event would give it every event it holds a second time.
func (s *Server) acceptBackground(w http.ResponseWriter, r *http.Request, a runTarget, row *db.Run, stream bool) error {
	if !stream {
		writeJSON(w, http.StatusAccepted, backgroundAccepted{RunID: row.RunID, SessionID: row.SessionID, Status: row.Status})
		return nil
	}
	after, err := resumeFrom(r, "", false)
	if err != nil {
		return err
	}
	return s.streamStored(w, r, a, row, after)
}

// checkBackgroundStream refuses, before anything is stored, a streamed
// background run whose database keeps no event log, and a Last-Event-ID
// that is not an event index (acceptBackground reads it; a new run's
// stream starts at its first event whatever it says).
func (s *Server) checkBackgroundStream(r *http.Request, a runTarget, req *runRequest) error {
	if !req.streams() {
		return nil
	}
	if _, err := resumeFrom(r, "", false); err != nil {
		return err
	}
	l, err := s.events.of(r.Context(), a.DB())
	if err != nil {
		return err
	}
	if l == nil {
		return errorf(http.StatusUnprocessableEntity, "background=true with stream=true needs a SQL database (sqlite, postgres, mysql) to keep the run's events; send stream=false and poll the run")
	}
	return nil
}

// cancelQueued cancels a durable run through the queue. handled is false
// when the run has no job (not a durable run): the caller goes on as for
// any run. A queued run is cancelled at once; a running one (in any
// process) is told to stop and awaited until its row is final, within the
// cancel timeout (202 with the stored status after it: never 200 for a run
// that keeps running).
func (s *Server) cancelQueued(w http.ResponseWriter, r *http.Request, a runTarget, runID string) (handled bool, err error) {
	if s.queue == nil {
		return false, nil
	}
	if _, err := s.loadRun(r, a, ""); err != nil {
		return true, err // 404 for another user's run
	}
	res, err := s.cancelDurable(r.Context(), a.DB(), runID)
	switch {
	case errors.Is(err, queue.ErrNotFound):
		return false, nil
	case err != nil:
		return true, err
	}
	if res.Status != queue.StatusRunning {
		return false, nil // the row says how it ended
	}
	timeout := time.NewTimer(s.cancelTimeout)
	defer timeout.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		row, err := s.loadRun(r, a, "")
		if err != nil {
			return true, err
		}
		switch row.Status {
		case run.StatusCancelled:
			writeJSON(w, http.StatusOK, cancelResponse{RunID: runID, Status: row.Status})
			return true, nil
		case run.StatusCompleted, run.StatusError, run.StatusRegenerated:
			return true, errorf(http.StatusConflict, "Run with ID %s already finished with status %s; only PENDING, RUNNING or PAUSED runs can be cancelled", runID, row.Status)
		}
		select {
		case <-tick.C:
		case <-timeout.C:
			writeJSON(w, http.StatusAccepted, cancelResponse{RunID: runID, Status: row.Status})
			return true, nil
		case <-r.Context().Done():
			return true, nil
		}
	}
}

// cancelDurable cancels a durable run through the queue. A waiting run the
// queue cancelled (queued, or paused: nothing executes it) is then settled
// as the cancel route settles a paused run it cancels itself: its pending
// approvals expire and the unfinished runs under it (a paused workflow's
// executor runs, a team's member runs) are cancelled with it, else they
// stay PAUSED and can be continued on their own. Settling is best effort
// (logged): the run itself is cancelled.
func (s *Server) cancelDurable(ctx context.Context, d *db.DB, runID string) (queue.Cancelled, error) {
	res, err := s.queue.Cancel(ctx, runID)
	if err != nil || res.Status != queue.StatusCancelled || d == nil {
		return res, err
	}
	row, err := d.GetRun(ctx, runID)
	if err == nil && row.Status == run.StatusCancelled {
		err = errors.Join(d.SetApprovalsRunStatus(ctx, runID, string(run.StatusCancelled)), s.cancelRunsUnder(ctx, d, row))
	}
	if err != nil {
		s.log.WarnContext(ctx, "cancel: settling the approvals and the runs under a cancelled durable run failed", "run_id", runID, "err", err)
	}
	return res, nil
}

// leaseContinue holds the durable queue's lease of the continue of row, a
// PAUSED run (queue.HoldContinue), when the server has a durable queue: a
// crash of this process mid-continue then leaves the run ERROR after
// lock_grace instead of RUNNING for good, a cancel through another replica
// reaches it, and a second continue of the run (through another replica,
// or an approval resolved there) is 409 instead of executing the run
// beside this one. done (call it once, when the continue ended) releases
// the lease with the run's stored status.
func (s *Server) leaseContinue(ctx context.Context, d *db.DB, row *db.Run) (context.Context, func(), error) {
	if s.queue == nil || d == nil {
		return ctx, func() {}, nil
	}
	c := producerOf(row)
	hctx, done, err := s.queue.HoldContinue(ctx, &queue.Job{ID: row.RunID, ComponentType: string(c.Type), ComponentID: c.ID,
		SessionID: row.SessionID, UserID: row.UserID})
	switch {
	case errors.Is(err, queue.ErrHeld):
		return nil, nil, &httpError{Status: http.StatusConflict,
			Detail: fmt.Sprintf("Run with ID %s is being executed or continued by another request: %s", row.RunID, run.ErrNotContinuable), Err: run.ErrNotContinuable}
	case err != nil:
		return nil, nil, err
	}
	return hctx, func() {
		status := run.StatusError
		if now, err := d.GetRun(context.WithoutCancel(hctx), row.RunID); err == nil {
			status = now.Status
		}
		done(status)
	}, nil
}
