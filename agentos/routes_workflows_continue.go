package agentos

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"strings"

	"github.com/agentryhq/agentry/internal/groupcommit"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/workflow"
)

// continueWorkflowRun is POST /workflows/{workflow_id}/runs/{run_id}/continue:
// it continues a PAUSED workflow run with the answers in step_requirements
// (confirmed true/false with rejection_feedback, user_input, selected_choices,
// edited_output). step_requirements that are not JSON, or not an array of
// requirements, are 400 (as Agno); answers that do not fit the step are
// 422, a run that is not PAUSED 409, another user's run 404.
func (s *Server) continueWorkflowRun(w http.ResponseWriter, r *http.Request, t runTarget) error {
	wf, ok := t.(*workflow.Workflow)
	if !ok {
		return s.continueUnsupported(w, r, t)
	}
	req, err := decodeContinueForm(r)
	if err != nil {
		return err
	}
	if err := req.answersFor(true); err != nil {
		return err
	}
	row, err := s.loadRun(r, wf, runSession(r.Context(), req.SessionID))
	if err != nil {
		return err
	}
	if !runUser(r.Context(), req.UserID).owns(row.UserID) {
		return &httpError{Status: http.StatusNotFound, Detail: "Run with ID " + row.RunID + " not found"}
	}
	if err := notPaused(row); err != nil {
		return err
	}
	// As the agent's continue: waits for an execution letting go of the run.
	ctx, f, err := s.runs.beginAfterFlight(r.Context(), row.RunID, wf.Component(), row.UserID, cancelWait)
	if err != nil {
		return beginErr(err)
	}
	defer s.runs.end(row.RunID, f)
	ctx, release, err := s.leaseContinue(ctx, wf.DB(), row)
	if err != nil {
		return err
	}
	defer release()
	if req.Stream {
		events := func(yield func(run.Event, error) bool) {
			// Streamed: its writes commit alone (see groupcommit.Alone).
			for ev, err := range s.observedStream(groupcommit.Alone(ctx), wf, row, func(ctx context.Context) iter.Seq2[run.Event, error] {
				return wf.ContinueStream(ctx, row.RunID, req.StepRequirements)
			}) {
				if !yield(ev, workflowContinueErr(err)) {
					return
				}
			}
		}
		return s.writeStream(ctx, w, r, wf, row.RunID, row.SessionID, events)
	}
	out, err := s.observedCall(ctx, wf, row, func(ctx context.Context) (*run.Output, error) {
		return wf.ContinueRun(ctx, row.RunID, req.StepRequirements)
	})
	return s.answerRun(w, r, out, workflowContinueErr(err))
}

// workflowContinueErr maps the errors of a continue that did not start.
func workflowContinueErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, workflow.ErrUnresolved), errors.Is(err, workflow.ErrInvalidUserInput):
		return &httpError{Status: http.StatusUnprocessableEntity, Detail: strings.TrimPrefix(err.Error(), "workflow: "), Err: err}
	case errors.Is(err, workflow.ErrNotPaused), errors.Is(err, workflow.ErrStepsChanged):
		// Steps changed: the run paused in another version of the stored
		// workflow than the one the route builds; not the caller's error.
		return &httpError{Status: http.StatusConflict, Detail: strings.TrimPrefix(err.Error(), "workflow: "), Err: err}
	}
	return err
}
