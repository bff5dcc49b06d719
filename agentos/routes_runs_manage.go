package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/groupcommit"
	"github.com/agentryhq/agentry/internal/wirecheck"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// targetRunsSort and sessionRunsSort are the sort_by/sort_order choices of
// the run listings: oldest first by default (creation time for a target's
// runs, position in the session for a session's).
var (
	targetRunsSort  = pageRules{SortColumns: []string{"created_at", "run_index", "updated_at"}, DefaultOrder: db.Asc}
	sessionRunsSort = pageRules{SortColumns: db.RunSortColumns, DefaultOrder: db.Asc}
)

// listRuns is GET …/runs?session_id=&status=&user_id=&sort_by=&sort_order=
// for any run target: a JSON array (like /sessions/{id}/runs) of the
// target's runs in scope, oldest first unless sorted otherwise, at most
// maxSessionRuns.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, a runTarget) error {
	d := a.DB()
	if d == nil {
		writeJSON(w, http.StatusOK, []runView{})
		return nil
	}
	q := r.URL.Query()
	sortBy, order, err := parseSortQuery(q, targetRunsSort)
	if err != nil {
		return err
	}
	f := db.RunFilter{SessionID: readSession(r.Context(), a, q.Get("session_id")), UserID: actAs(r.Context(), q.Get("user_id")).id,
		Limit: sessionRunsPage, SortBy: sortBy, SortOrder: order}
	filterByTarget(&f, a)
	if v := q.Get("status"); v != "" {
		st, err := run.ParseStatus(v)
		if err != nil {
			return &httpError{Status: http.StatusUnprocessableEntity, Detail: "status must be one of " + run.StatusNames()}
		}
		f.Statuses = []run.Status{st}
	}
	views, err := s.collectRunViews(r.Context(), d, f, createdRange{})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, views)
	return nil
}

// loadRun reads {run_id}: 404 when missing, of another agent (team,
// workflow), of another user (the db scope), or not matching an explicit
// ?user_id=/?session_id=.
func (s *Server) loadRun(r *http.Request, a runTarget, sessionID string) (*db.Run, error) {
	runID := chi.URLParam(r, "run_id")
	notFound := errorf(http.StatusNotFound, "Run with ID %s not found", runID)
	d := a.DB()
	if d == nil {
		return nil, notFound
	}
	row, err := d.GetRun(r.Context(), runID)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, notFound
	case err != nil:
		return nil, err
	case !ownsRow(a, row), !actAs(r.Context(), r.URL.Query().Get("user_id")).owns(row.UserID),
		sessionID != "" && row.SessionID != sessionID:
		return nil, notFound
	}
	return row, nil
}

// readSession is the session_id a read of a's runs (GET …/runs,
// GET …/runs/{run_id}) names: for a workflow, as in Agno, the token's
// session id claim overrides the query's (runSession); Agno reads an
// agent's or a team's runs in the session the query names.
func readSession(ctx context.Context, a runTarget, requested string) string {
	if _, ok := a.(*workflow.Workflow); ok {
		return runSession(ctx, requested)
	}
	return requested
}

// getRun is GET …/runs/{run_id} for any run target.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request, a runTarget) error {
	row, err := s.loadRun(r, a, readSession(r.Context(), a, r.URL.Query().Get("session_id")))
	if err != nil {
		return err
	}
	v, err := newRunView(row)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// cancelWait bounds how long the cancel route waits for a cancelled run to
// stop and be stored, so a read right after the answer sees CANCELLED.
const cancelWait = 10 * time.Second

// cancelResponse is the cancel route's answer (AgentOS answers an object).
type cancelResponse struct {
	RunID  string     `json:"run_id"`
	Status run.Status `json:"status"`
}

// cancelRun is POST …/runs/{run_id}/cancel for any run target. The answer
// says how the run ended, never what it was when the request came in:
//   - 200 {"status":"CANCELLED"}: the run is stored CANCELLED. A run executing
//     in this process (through the server or from Go code on the same
//     target: the run registry has both) is stopped and answered once it is
//     stored; a stored PENDING, RUNNING or PAUSED run that nothing here
//     executes (left by a crash, or by a run that could not store its end) is
//     marked CANCELLED, with the unfinished runs under it (see markCancelled);
//     a CANCELLED run answers 200 again.
//   - 409: the run finished (COMPLETED, ERROR) before the cancel reached it.
//   - 202 {"status": <stored status>}: the run was told to stop but had not
//     stopped within cancelWait (e.g. a tool that ignores cancellation); it
//     ends CANCELLED when it does stop.
//
// Another user's run is 404 and untouched.
func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request, a runTarget) error {
	runID := chi.URLParam(r, "run_id")
	if handled, err := s.cancelQueued(w, r, a, runID); handled {
		return err
	}
	ctx := r.Context()
	timeout := time.NewTimer(s.cancelTimeout)
	defer timeout.Stop()
	c := a.Component()
	// Each pass either answers or waits for an execution of the run to end;
	// a run cannot start again and again in between, so a few passes do.
	for range 4 {
		// A run executing in this process: stop it and wait until it is stored.
		if e, ok := s.runs.reg.Lookup(runID); ok && e.Registration().Component.Key() == c.Key() && s.ownsFlight(ctx, e.Registration().UserID) {
			e.Cancel(errCancelRoute)
			select {
			case <-e.Done():
			case <-timeout.C:
				s.answerCancelPending(w, r, a, runID)
				return nil
			case <-ctx.Done():
				return nil
			}
			if a.DB() == nil {
				// Nothing is stored to read the end from; the run has stopped.
				writeJSON(w, http.StatusOK, cancelResponse{RunID: runID, Status: run.StatusCancelled})
				return nil
			}
		}
		row, err := s.loadRun(r, a, "")
		if err != nil {
			return err
		}
		switch row.Status {
		case run.StatusCancelled:
			writeJSON(w, http.StatusOK, cancelResponse{RunID: runID, Status: row.Status})
			return nil
		case run.StatusCompleted, run.StatusError, run.StatusRegenerated:
			return errorf(http.StatusConflict, "Run with ID %s already finished with status %s; only PENDING, RUNNING or PAUSED runs can be cancelled", runID, row.Status)
		}
		// Nothing here executes it. Claim the run id while marking it, so that
		// no run or continue of it starts in this process meanwhile; one that
		// started since the lookup is stopped on the next pass.
		_, claim, err := s.runs.begin(ctx, runID, c, row.UserID, false)
		switch {
		case errors.Is(err, errRunInFlight):
			continue
		case errors.Is(err, errDraining):
			// Shutting down: no run starts any more, so no claim is needed.
		case err != nil:
			return beginErr(err)
		}
		status, err := s.markCancelled(ctx, a, runID)
		if claim != nil {
			s.runs.end(runID, claim)
		}
		if err != nil {
			return err
		}
		if status != run.StatusCancelled {
			return errorf(http.StatusConflict, "Run with ID %s already finished with status %s; only PENDING, RUNNING or PAUSED runs can be cancelled", runID, status)
		}
		writeJSON(w, http.StatusOK, cancelResponse{RunID: runID, Status: status})
		return nil
	}
	return errorf(http.StatusConflict, "Run with ID %s keeps being started; retry the cancel", runID)
}

// answerCancelPending is the 202 for a run told to stop that has not stopped
// yet, with its stored status.
func (s *Server) answerCancelPending(w http.ResponseWriter, r *http.Request, a runTarget, runID string) {
	status := run.StatusRunning
	if row, err := s.loadRun(r, a, ""); err == nil {
		status = row.Status
	}
	writeJSON(w, http.StatusAccepted, cancelResponse{RunID: runID, Status: status})
}

// markCancelled stores a PENDING, RUNNING or PAUSED run as CANCELLED and
// returns the status the run now has (a finished run is left as it is). The
// caller holds the run's claim, so nothing in this process writes it
// meanwhile. The run waits for nothing any more: what a pause awaited
// (requirements, a workflow's step and error requirements and paused step)
// is cleared, as a run ending CANCELLED on its own stores it, and its
// pending approvals expire (a person would otherwise be asked to decide on
// it, and /approvals would count it).
//
// The runs under it that nothing here executes either (the executor runs
// of a workflow's steps, a team's member runs, and theirs: its pause is
// theirs) are cancelled with it; left PAUSED, they could be continued on
// their own through their agent's or team's routes.
func (s *Server) markCancelled(ctx context.Context, a runTarget, runID string) (run.Status, error) {
	d := a.DB()
	status, row, err := s.storeCancelled(ctx, d, runID)
	if err != nil || status != run.StatusCancelled || row == nil {
		return status, err
	}
	if err := s.cancelRunsUnder(ctx, d, row); err != nil {
		// The run is cancelled: the answer says so; what is left under it
		// is logged.
		s.log.WarnContext(ctx, "cancel: cancelling the runs under the cancelled run failed", "run_id", runID, "err", err)
	}
	return status, nil
}

// storeCancelled is markCancelled's write of one run; row is the run as it
// was, nil when it had finished.
func (s *Server) storeCancelled(ctx context.Context, d *db.DB, runID string) (run.Status, *db.Run, error) {
	row, err := d.GetRun(ctx, runID)
	if err != nil {
		return "", nil, err
	}
	switch row.Status {
	case run.StatusCancelled, run.StatusCompleted, run.StatusError, run.StatusRegenerated:
		return row.Status, nil, nil
	}
	out, err := row.Output()
	if err != nil {
		return "", nil, err
	}
	out.Status = run.StatusCancelled
	out.Content, out.ContentType = fmt.Sprintf("run %s was cancelled: %s", runID, errCancelRoute), "str"
	out.ClearPause()
	out.UpdatedAt = time.Now().Unix()
	stored, err := db.RunFromOutput(out)
	if err == nil {
		_, err = d.UpsertRun(ctx, stored)
	}
	if err != nil {
		return "", nil, err
	}
	if err := d.SetApprovalsRunStatus(ctx, runID, string(run.StatusCancelled)); err != nil {
		s.log.WarnContext(ctx, "cancel: recording the cancel on the run's approvals failed", "run_id", runID, "err", err)
	}
	return run.StatusCancelled, row, nil
}

// maxRunsUnder bounds the runs cancelled under one run (a workflow's
// steps' executor runs, a team's member runs, and theirs).
const maxRunsUnder = 1000

// cancelRunsUnder stores CANCELLED the unfinished runs under parent, in
// its database and session, each under its claim in this process: one
// executing here (continued on its own) is left to end by itself.
func (s *Server) cancelRunsUnder(ctx context.Context, d *db.DB, parent *db.Run) error {
	unfinished := []run.Status{run.StatusPending, run.StatusRunning, run.StatusPaused}
	parents, seen := []string{parent.RunID}, 0
	for len(parents) > 0 && seen < maxRunsUnder {
		p := parents[0]
		parents = parents[1:]
		rows, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: parent.SessionID, ParentRunID: p, Statuses: unfinished, Limit: 100, Page: 1})
		if err != nil {
			return err
		}
		for i := range rows {
			r := &rows[i]
			seen++
			parents = append(parents, r.RunID)
			_, claim, err := s.runs.begin(ctx, r.RunID, producerOf(r), r.UserID, false)
			switch {
			case errors.Is(err, errRunInFlight):
				continue
			case errors.Is(err, errDraining):
			case err != nil:
				return err
			}
			_, _, err = s.storeCancelled(ctx, d, r.RunID)
			if claim != nil {
				s.runs.end(r.RunID, claim)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// producerOf is the component that produced a stored run.
func producerOf(r *db.Run) run.Component {
	switch r.RunType {
	case run.TypeTeam:
		return run.Component{Type: run.TypeTeam, ID: r.TeamID}
	case run.TypeWorkflow:
		return run.Component{Type: run.TypeWorkflow, ID: r.WorkflowID}
	}
	return run.Component{Type: run.TypeAgent, ID: r.AgentID}
}

// ownsFlight reports whether the caller may act on an executing run of
// userID.
func (s *Server) ownsFlight(ctx context.Context, userID string) bool {
	return actAs(ctx, "").owns(userID)
}

// continueRequest is a decoded POST …/runs/{run_id}/continue form: tools
// and requirements continue an agent or team run, step_requirements a
// workflow run.
type continueRequest struct {
	Tools            []run.ToolExecution
	Requirements     []run.Requirement
	StepRequirements []run.StepRequirement
	SessionID        string
	UserID           string
	Stream           bool
}

// continueFormFields are the continue form's fields Agentry implements.
const continueFormFields = "tools, requirements, step_requirements, session_id, user_id, stream"

// continueDefaults are the fields of Agno's continue routes that Agentry
// does not implement (appending input, continue_from, fork, regenerate,
// background continues, factory_input). Each is accepted only empty or at
// Agno's default, which asks for nothing; any other value is refused (422)
// rather than ignored.
var continueDefaults = map[string]func(string) bool{
	"input":                   isBlank,
	"additional_instructions": isBlank,
	"replace_original":        isBlank,
	"factory_input":           isBlank,
	"continue_from":           func(v string) bool { return isBlank(v) || strings.TrimSpace(v) == "end" },
	"fork":                    isFalse,
	"regenerate":              isFalse,
	"background":              isFalse,
}

func isBlank(v string) bool { return strings.TrimSpace(v) == "" }

func isFalse(v string) bool {
	on, err := formBool("", v, false)
	return err == nil && !on
}

// decodeContinueForm reads the continue form (multipart or urlencoded): tools,
// requirements or step_requirements as JSON arrays, session_id, user_id,
// stream (default true). Agno's other continue fields are accepted only at
// their defaults (continueDefaults); any other field, and files, are 422.
func decodeContinueForm(r *http.Request) (*continueRequest, error) {
	var lim formLimits
	lim.fill()
	fields := map[string]string{}
	var files runRequest
	if err := readFormBody(r, lim, fields, &files); err != nil {
		return nil, err
	}
	if len(files.Files) > 0 {
		return nil, errorf(http.StatusUnprocessableEntity, "continuing a run takes no files")
	}
	req := &continueRequest{Stream: true}
	var err error
	for name, v := range fields {
		switch name {
		case "tools":
			err = formArray(name, v, &req.Tools, wirecheck.MistypedTools)
		case "requirements":
			err = formArray(name, v, &req.Requirements, wirecheck.MistypedRequirements)
		case "step_requirements":
			err = formArray(name, v, &req.StepRequirements, wirecheck.MistypedStepRequirements)
		case "session_id":
			req.SessionID, err = formID(name, v)
		case "user_id":
			req.UserID, err = formID(name, v)
		case "stream":
			req.Stream, err = formBool(name, v, true)
		default:
			if ok, known := continueDefaults[name]; known {
				if !ok(v) {
					err = errorf(http.StatusUnprocessableEntity, "field %s is not supported by this server (only its default is accepted); the continue form takes %s", safeName(name), continueFormFields)
				}
			} else {
				err = errorf(http.StatusUnprocessableEntity, "field %s is not supported by this server; the continue form takes %s", safeName(name), continueFormFields)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return req, nil
}

// formArray decodes a JSON array field; empty means absent. JSON that does
// not parse, JSON that is not an array of the field's objects, and objects
// with a member the field models but whose value it cannot hold (mistyped,
// naming it: decoded, it would be set aside and the answer lost) are 400,
// with Agno's details.
func formArray[T any](name, v string, dst *[]T, mistyped func(path string, items []T) error) error {
	if v == "" {
		return nil
	}
	if !json.Valid([]byte(v)) {
		return errorf(http.StatusBadRequest, "Invalid JSON in %s field", name)
	}
	if err := json.Unmarshal([]byte(v), dst); err != nil {
		return &httpError{Status: http.StatusBadRequest, Err: err,
			Detail: "Invalid structure or content for " + name + ": " + name + " must be a JSON array of objects (" + err.Error() + ")"}
	}
	if err := mistyped(name, *dst); err != nil {
		return &httpError{Status: http.StatusBadRequest, Err: err, Detail: "Invalid structure or content for " + name + ": " + err.Error()}
	}
	return nil
}

// runContinuer is a target whose PAUSED runs can be continued (an agent, a
// team).
type runContinuer interface {
	runTarget
	ContinueRun(ctx context.Context, paused *run.Output, opts ...agent.RunOption) (*run.Output, error)
	ContinueStream(ctx context.Context, paused *run.Output, opts ...agent.RunOption) iter.Seq2[run.Event, error]
}

var (
	_ runContinuer = (*agent.Agent)(nil)
	_ runContinuer = (*team.Team)(nil)
)

// continueAgentRun is POST /agents/{agent_id}/runs/{run_id}/continue (and
// /teams/{team_id}/…): it resumes a PAUSED run with the resolutions in tools
// or requirements (a team's are handed on to the member runs that paused
// it). A run that is not PAUSED is 409; another user's run is 404 and
// untouched.
func (s *Server) continueAgentRun(w http.ResponseWriter, r *http.Request, t runTarget) error {
	a, ok := t.(runContinuer)
	if !ok {
		return s.continueUnsupported(w, r, t)
	}
	req, err := decodeContinueForm(r)
	if err != nil {
		return err
	}
	if err := req.answersFor(false); err != nil {
		return err
	}
	row, err := s.loadRun(r, a, runSession(r.Context(), req.SessionID))
	if err != nil {
		return err
	}
	if !runUser(r.Context(), req.UserID).owns(row.UserID) {
		return &httpError{Status: http.StatusNotFound, Detail: "Run with ID " + row.RunID + " not found"}
	}
	if err := notPaused(row); err != nil {
		return err
	}
	// A run that just paused may still be let go of by the execution that
	// paused it (a background worker, a streamed request): the client saw
	// PAUSED, so its continue waits for that end rather than being 409.
	ctx, f, err := s.runs.beginAfterFlight(r.Context(), row.RunID, a.Component(), row.UserID, cancelWait)
	if err != nil {
		return beginErr(err)
	}
	defer s.runs.end(row.RunID, f)
	// Read the run again now that this request owns it: a concurrent continue
	// may have finished it between the first read and begin.
	if row, err = a.DB().GetRun(ctx, row.RunID); err != nil {
		return err
	}
	if err := notPaused(row); err != nil {
		return err
	}
	paused, err := row.Output()
	if err != nil {
		return err
	}
	ctx, release, err := s.leaseContinue(ctx, a.DB(), row)
	if err != nil {
		return err
	}
	defer release()
	var opts []agent.RunOption
	if req.Tools != nil {
		opts = append(opts, agent.WithTools(req.Tools))
	}
	if req.Requirements != nil {
		opts = append(opts, agent.WithRequirements(req.Requirements))
	}
	if req.Stream {
		// Streamed: its writes commit alone (see groupcommit.Alone).
		return s.writeStream(ctx, w, r, a, row.RunID, row.SessionID, s.observedStream(groupcommit.Alone(ctx), a, row, func(ctx context.Context) iter.Seq2[run.Event, error] {
			return a.ContinueStream(ctx, paused, opts...)
		}))
	}
	out, err := s.observedCall(ctx, a, row, func(ctx context.Context) (*run.Output, error) { return a.ContinueRun(ctx, paused, opts...) })
	return s.answerRun(w, r, out, err)
}

// answersFor refuses (422) a continue's answers meant for another kind of
// run: tools and requirements answer an agent's or a team's pause,
// step_requirements a workflow's. Dropped, the continue would go on as if
// they had not been sent. An empty list asks for nothing.
func (req *continueRequest) answersFor(workflow bool) error {
	var field string
	switch {
	case !workflow && len(req.StepRequirements) > 0:
		field = "step_requirements"
	case workflow && len(req.Tools) > 0:
		field = "tools"
	case workflow && len(req.Requirements) > 0:
		field = "requirements"
	default:
		return nil
	}
	if workflow {
		return errorf(http.StatusUnprocessableEntity, "field %q does not answer a workflow's run; its continue takes step_requirements", field)
	}
	return errorf(http.StatusUnprocessableEntity, "field %q answers a workflow's run; an agent's or a team's continue takes tools, requirements", field)
}

// notPaused is the 409 for continuing a run that is not PAUSED.
func notPaused(row *db.Run) error {
	if row.Status == run.StatusPaused {
		return nil
	}
	return &httpError{Status: http.StatusConflict, Detail: fmt.Sprintf("Run with ID %s is %s: %s", row.RunID, row.Status, run.ErrNotContinuable), Err: run.ErrNotContinuable}
}
