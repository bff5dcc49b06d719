package agentos

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/team"
)

// teamTarget resolves {team_id}: team runs are the agent run handlers over
// runTarget (same forms, streaming, background runs, user isolation).
func (s *Server) teamTarget(id string) (runTarget, bool) {
	t, ok := s.teams[id]
	return t, ok
}

// teamResponse mirrors AgentOS's TeamResponse: the leader's settings and the
// members, agent responses then team responses (member teams).
type teamResponse struct {
	ID           string         `json:"id"`
	Name         string         `json:"name,omitempty"`
	DBID         string         `json:"db_id,omitempty"`
	Description  string         `json:"description,omitempty"`
	Mode         string         `json:"mode"`
	Model        *modelResponse `json:"model,omitempty"`
	Members      []any          `json:"members"`
	Instructions []string       `json:"instructions,omitempty"`
	Sessions     map[string]any `json:"sessions,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
}

func newTeamResponse(t *team.Team) teamResponse {
	cfg := t.Config()
	resp := teamResponse{ID: t.ID(), Name: t.Name(), Description: cfg.Description, Mode: string(t.Mode()),
		Model: newModelResponse(cfg.Model), Members: []any{}, Instructions: cfg.Instructions, Metadata: cfg.Metadata}
	if cfg.DB != nil {
		resp.DBID = cfg.DB.ID
	}
	for _, m := range t.Members() {
		resp.Members = append(resp.Members, newAgentResponse(m))
	}
	for _, sub := range t.Teams() {
		resp.Members = append(resp.Members, newTeamResponse(sub))
	}
	if cfg.AddHistoryToContext {
		resp.Sessions = map[string]any{"add_history_to_context": true}
		if cfg.NumHistoryRuns > 0 {
			resp.Sessions["num_history_runs"] = cfg.NumHistoryRuns
		}
	}
	return resp
}

func (s *Server) listTeams(w http.ResponseWriter, _ *http.Request) error {
	out := make([]teamResponse, 0, len(s.cfg.Teams))
	for _, t := range s.cfg.Teams {
		out = append(out, newTeamResponse(t))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getTeam(w http.ResponseWriter, r *http.Request) error {
	t, ok := s.teams[chi.URLParam(r, "team_id")]
	if !ok {
		return errorf(http.StatusNotFound, "Team not found")
	}
	writeJSON(w, http.StatusOK, newTeamResponse(t))
	return nil
}
