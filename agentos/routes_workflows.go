package agentos

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/workflow"
)

// workflowRoutes mounts /workflows and the workflow run routes, which are
// the agent run handlers over runTarget. Streams carry WorkflowStarted,
// StepStarted, the steps' own events, StepCompleted and WorkflowCompleted
// (or WorkflowError / WorkflowCancelled). Continue answers 409 (not PAUSED)
// or 501: workflow runs never pause.
//
// Scopes: workflows:read (list, get, runs list/get), workflows:run (create,
// cancel, continue).
func (s *Server) workflowRoutes(r chi.Router) {
	read := s.RequireScope("workflows", "read", "workflow_id")
	r.With(s.RequireScope("workflows", "read", "")).Get("/workflows", s.handle(s.listWorkflows))
	r.With(read).Get("/workflows/{workflow_id}", s.handle(s.getWorkflow))
	s.mountTargetRuns(r, "workflows", "workflow_id", "Workflow not found", s.workflowTarget, s.continueUnsupported)
}

func (s *Server) workflowTarget(id string) (runTarget, bool) {
	w, ok := s.workflows[id]
	return w, ok
}

// stepResponse describes one step: its name and who executes it.
type stepResponse struct {
	Name         string `json:"name"`
	ExecutorType string `json:"executor_type"`
	AgentID      string `json:"agent_id,omitempty"`
	TeamID       string `json:"team_id,omitempty"`
}

// workflowResponse mirrors AgentOS's WorkflowResponse.
type workflowResponse struct {
	ID          string         `json:"id"`
	Name        string         `json:"name,omitempty"`
	DBID        string         `json:"db_id,omitempty"`
	Description string         `json:"description,omitempty"`
	Steps       []stepResponse `json:"steps"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

func newWorkflowResponse(w *workflow.Workflow) workflowResponse {
	cfg := w.Config()
	resp := workflowResponse{ID: w.ID(), Name: w.Name(), Description: cfg.Description, Steps: []stepResponse{}, Metadata: cfg.Metadata}
	if cfg.DB != nil {
		resp.DBID = cfg.DB.ID
	}
	for _, st := range w.Steps() {
		sr := stepResponse{Name: st.Name, ExecutorType: "agent"}
		if st.Agent != nil {
			sr.AgentID = st.Agent.ID()
		} else {
			sr.ExecutorType, sr.TeamID = "team", st.Team.ID()
		}
		resp.Steps = append(resp.Steps, sr)
	}
	return resp
}

func (s *Server) listWorkflows(w http.ResponseWriter, _ *http.Request) error {
	out := make([]workflowResponse, 0, len(s.cfg.Workflows))
	for _, wf := range s.cfg.Workflows {
		out = append(out, newWorkflowResponse(wf))
	}
	WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request) error {
	wf, ok := s.workflows[chi.URLParam(r, "workflow_id")]
	if !ok {
		return Errorf(http.StatusNotFound, "Workflow not found")
	}
	WriteJSON(w, http.StatusOK, newWorkflowResponse(wf))
	return nil
}
