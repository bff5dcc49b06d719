package agentos

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/workflow"
)

// workflowTarget resolves {workflow_id} for the run routes. Workflow streams
// carry WorkflowStarted, StepStarted, the steps' own events, StepCompleted and
// WorkflowCompleted (or WorkflowError / WorkflowCancelled).
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
		c := st.Runner.Component()
		// The step's id goes in the field for its kind, as its events carry it.
		ids := c.Event("")
		sr := stepResponse{Name: st.Name, ExecutorType: string(c.Type), AgentID: ids.AgentID, TeamID: ids.TeamID}
		resp.Steps = append(resp.Steps, sr)
	}
	return resp
}

func (s *Server) listWorkflows(w http.ResponseWriter, _ *http.Request) error {
	out := make([]workflowResponse, 0, len(s.cfg.Workflows))
	for _, wf := range s.cfg.Workflows {
		out = append(out, newWorkflowResponse(wf))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request) error {
	wf, ok := s.workflows[chi.URLParam(r, "workflow_id")]
	if !ok {
		return errorf(http.StatusNotFound, "Workflow not found")
	}
	writeJSON(w, http.StatusOK, newWorkflowResponse(wf))
	return nil
}
