package agentos

import (
	"context"
	"iter"
	"maps"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// runTarget is what the run routes execute: an *agent.Agent, a *team.Team or
// a *workflow.Workflow. The routes are written once against it; what differs
// by kind (ids on stored rows, event names) is in the helpers below.
type runTarget interface {
	ID() string
	Name() string
	DB() *db.DB
	Run(ctx context.Context, input run.Input, opts ...agent.RunOption) (*run.Output, error)
	Stream(ctx context.Context, input run.Input, opts ...agent.RunOption) iter.Seq2[run.Event, error]
	CancelRun(runID string) bool
}

var (
	_ runTarget = (*agent.Agent)(nil)
	_ runTarget = (*team.Team)(nil)
	_ runTarget = (*workflow.Workflow)(nil)
)

func kindOf(t runTarget) run.Type {
	switch t.(type) {
	case *team.Team:
		return run.TypeTeam
	case *workflow.Workflow:
		return run.TypeWorkflow
	}
	return run.TypeAgent
}

// flightKey names a target in the runner and in idempotent run ids. Agents
// keep their bare id; teams and workflows are prefixed so that an agent and a
// team sharing an id cannot cancel each other's runs.
func flightKey(t runTarget) string {
	if k := kindOf(t); k != run.TypeAgent {
		return string(k) + ":" + t.ID()
	}
	return t.ID()
}

// ownsRow reports whether a stored run is the target's own run.
func ownsRow(t runTarget, row *db.Run) bool {
	switch kindOf(t) {
	case run.TypeTeam:
		return row.RunType == run.TypeTeam && row.TeamID == t.ID()
	case run.TypeWorkflow:
		return row.RunType == run.TypeWorkflow && row.WorkflowID == t.ID()
	}
	return row.AgentID == t.ID()
}

// filterByTarget restricts a run listing to the target's runs.
func filterByTarget(f *db.RunFilter, t runTarget) {
	switch kindOf(t) {
	case run.TypeTeam:
		f.TeamID, f.RunType = t.ID(), run.TypeTeam
	case run.TypeWorkflow:
		f.WorkflowID, f.RunType = t.ID(), run.TypeWorkflow
	default:
		f.AgentID = t.ID()
	}
}

// newSession is the session row a background run creates for a new session id.
func newSession(t runTarget, sessionID, userID string) *db.Session {
	s := &db.Session{SessionID: sessionID, SessionType: kindOf(t), UserID: userID}
	switch s.SessionType {
	case run.TypeTeam:
		s.TeamID = t.ID()
	case run.TypeWorkflow:
		s.WorkflowID = t.ID()
	default:
		s.AgentID = t.ID()
	}
	return s
}

// pendingOutput is the PENDING run a background run stores before it starts.
func pendingOutput(t runTarget, st *runStart) *run.Output {
	in := st.input
	var md map[string]any
	var info model.Info
	switch c := t.(type) {
	case *agent.Agent:
		md, info = maps.Clone(c.Config().Metadata), c.ModelInfo()
	case *team.Team:
		md, info = maps.Clone(c.Config().Metadata), c.ModelInfo()
	case *workflow.Workflow:
		md = maps.Clone(c.Config().Metadata)
	}
	if md == nil && st.metadata != nil {
		md = map[string]any{}
	}
	maps.Copy(md, st.metadata)
	out := &run.Output{RunID: st.runID, SessionID: st.sessionID, UserID: st.userID, Input: &in,
		Model: info.ID, ModelProvider: info.Provider, Metadata: md, Status: run.StatusPending, CreatedAt: time.Now().Unix()}
	switch kindOf(t) {
	case run.TypeTeam:
		out.TeamID, out.TeamName = t.ID(), t.Name()
	case run.TypeWorkflow:
		out.WorkflowID, out.WorkflowName = t.ID(), t.Name()
	default:
		out.AgentID, out.AgentName = t.ID(), t.Name()
	}
	return out
}

// storageErrorEvent ends a stream whose run finished but could not be stored,
// in the target's event vocabulary.
func storageErrorEvent(t runTarget, runID, sessionID string) *run.Event {
	e := &run.Event{Event: run.EventRunError, CreatedAt: time.Now().Unix(), RunID: runID, SessionID: sessionID,
		Content: "the run could not be stored", ErrorType: "StorageError"}
	switch kindOf(t) {
	case run.TypeTeam:
		e.Event, e.TeamID, e.TeamName = run.TeamEvent(run.EventRunError), t.ID(), t.Name()
	case run.TypeWorkflow:
		e.Event, e.WorkflowID, e.WorkflowName = run.EventWorkflowError, t.ID(), t.Name()
	default:
		e.AgentID, e.AgentName = t.ID(), t.Name()
	}
	return e
}

// targetHandler is a run route written against runTarget.
type targetHandler func(w http.ResponseWriter, r *http.Request, t runTarget) error

// withTarget resolves the URL's {param} with lookup and calls h, or answers
// 404 with detail.
func withTarget(param, detail string, lookup func(id string) (runTarget, bool), h targetHandler) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		t, ok := lookup(chi.URLParam(r, param))
		if !ok {
			return errorf(http.StatusNotFound, "%s", detail)
		}
		return h(w, r, t)
	}
}

// continueUnsupported answers POST …/runs/{run_id}/continue for teams and
// workflows: their runs never pause (a team's leader only calls delegation
// tools; a workflow step that pauses fails its run), so a run that exists is
// 409 like any run that is not PAUSED, and a PAUSED one (written by other
// software) is 501.
func (s *Server) continueUnsupported(w http.ResponseWriter, r *http.Request, t runTarget) error {
	row, err := s.loadRun(r, t, "")
	if err != nil {
		return err
	}
	if err := notPaused(row); err != nil {
		return err
	}
	writeError(w, http.StatusNotImplemented, "continuing a paused "+string(kindOf(t))+" run is not supported; only agent runs can be continued")
	return nil
}
