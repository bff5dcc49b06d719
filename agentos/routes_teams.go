package agentos

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/db"
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
	ID string `json:"id"`
	// IsComponent: a stored component (the registry), not the config file's.
	IsComponent  bool           `json:"is_component"`
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

// listTeams lists the configured teams, then the stored ones the caller
// sees (is_component true).
func (s *Server) listTeams(w http.ResponseWriter, r *http.Request) error {
	out := make([]teamResponse, 0, len(s.cfg.Teams))
	for _, t := range s.cfg.Teams {
		if s.mayRead(r, "teams", t.ID()) {
			out = append(out, newTeamResponse(t))
		}
	}
	for _, st := range s.storedTargets(r.Context(), db.ComponentTeam) {
		if t, ok := st.(*team.Team); ok && s.mayRead(r, "teams", t.ID()) {
			res := newTeamResponse(t)
			res.IsComponent = true
			out = append(out, res)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getTeam(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "team_id")
	if t, ok := s.teams[id]; ok {
		writeJSON(w, http.StatusOK, newTeamResponse(t))
		return nil
	}
	if t, ok := s.storedOne(r.Context(), db.ComponentTeam, id).(*team.Team); ok {
		res := newTeamResponse(t)
		res.IsComponent = true
		writeJSON(w, http.StatusOK, res)
		return nil
	}
	return errorf(http.StatusNotFound, "Team not found")
}
