package agentos

import (
	"encoding/json"
	"maps"
	"net/http"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// runTarget is what the run routes execute: any agent.Runner (an agent, a
// team, a workflow, or a kind the server was not written for). The routes
// are written once against it; what differs by kind (ids on stored rows,
// event names) comes from its run.Component, never from a switch here.
type runTarget = agent.Runner

var (
	_ runTarget = (*agent.Agent)(nil)
	_ runTarget = (*team.Team)(nil)
	_ runTarget = (*workflow.Workflow)(nil)

	_ agent.OptionChecker = (*agent.Agent)(nil)
	_ agent.OptionChecker = (*team.Team)(nil)
	_ agent.OptionChecker = (*workflow.Workflow)(nil)
)

// Optional abilities of a runTarget, read into the runs the server stores
// before the target runs them (a background run's PENDING row, the RUNNING
// snapshot).
type (
	// modelReporter names the model the target's runs use.
	modelReporter interface{ ModelInfo() model.Info }
	// metadataReporter gives the metadata copied into every run.
	metadataReporter interface{ Metadata() map[string]any }
	// componentReporter gives the component data (agent_data,
	// workflow_data) the target's runs write to their session's row.
	componentReporter interface{ ComponentData() json.RawMessage }
)

// flightKey names a target in idempotent run ids (see
// run.Component.Key: agents keep their bare id, teams and workflows are
// prefixed, so an agent and a team sharing an id cannot cancel each other's
// runs).
func flightKey(t runTarget) string { return t.Component().Key() }

// ownsRow reports whether a stored run is the target's own run.
func ownsRow(t runTarget, row *db.Run) bool { return row.ProducedBy(t.Component()) }

// filterByTarget restricts a run listing to the target's runs.
func filterByTarget(f *db.RunFilter, t runTarget) { f.ProducedBy(t.Component()) }

// newSession is the session row a background run creates for a new session
// id, with the component data the run itself writes there: a run that ends
// within the second it was enqueued in, changing nothing else, then leaves
// the row as it is (one write of the row fewer). It is written only where
// no row exists yet (db.ExpectNoRow): a session another process created
// since the caller looked is not written over (the caller's
// sessionline.Update looks again).
func newSession(t runTarget, sessionID, userID string) *db.Session {
	s := &db.Session{SessionID: sessionID, UserID: userID, Expect: db.ExpectOf(nil)}
	var data json.RawMessage
	if c, ok := t.(componentReporter); ok {
		data = c.ComponentData()
	}
	s.SetComponent(t.Component(), data)
	return s
}

// pendingOutput is the PENDING run a background run stores before it starts.
func pendingOutput(t runTarget, st *runStart) *run.Output {
	in := st.input
	var md map[string]any
	if m, ok := t.(metadataReporter); ok {
		md = maps.Clone(m.Metadata())
	}
	var info model.Info
	if m, ok := t.(modelReporter); ok {
		info = m.ModelInfo()
	}
	if md == nil && st.metadata != nil {
		md = map[string]any{}
	}
	maps.Copy(md, st.metadata)
	out := &run.Output{RunID: st.runID, SessionID: st.sessionID, UserID: st.userID, Input: &in,
		Model: info.ID, ModelProvider: info.Provider, Metadata: md, Status: run.StatusPending, CreatedAt: time.Now().Unix()}
	t.Component().Stamp(out)
	return out
}

// storageErrorEvent ends a stream whose run finished but could not be stored,
// in the target's event vocabulary (RunError, TeamRunError, WorkflowError).
func storageErrorEvent(t runTarget, runID, sessionID string) *run.Event {
	e := t.Component().Event(run.EventRunError)
	e.CreatedAt, e.RunID, e.SessionID = time.Now().Unix(), runID, sessionID
	e.Content, e.ErrorType = "the run could not be stored", "StorageError"
	return &e
}

// targetHandler is a run route written against runTarget.
type targetHandler func(w http.ResponseWriter, r *http.Request, t runTarget) error

// continueUnsupported answers POST …/runs/{run_id}/continue for run targets
// that cannot continue runs (workflows continue through
// continueWorkflowRun), so a run that exists is 409 like any run that is not
// PAUSED, and a PAUSED one (written by other software) is 501.
func (s *Server) continueUnsupported(w http.ResponseWriter, r *http.Request, t runTarget) error {
	row, err := s.loadRun(r, t, "")
	if err != nil {
		return err
	}
	if err := notPaused(row); err != nil {
		return err
	}
	writeError(w, http.StatusNotImplemented, "continuing a paused "+string(t.Component().Type)+" run is not supported; only agent runs can be continued")
	return nil
}
