package agentos

import "net/http"

// infoResponse is GET /info. Agno's AgentOS source for this route was not at
// hand, so the shape is Agentry's own, kept small and additive: what the OS is
// (os_id, name, description, version), since when it runs, and how many
// agents, teams and workflows it serves (ids in the same order as /config).
type infoResponse struct {
	OSID           string   `json:"os_id"`
	Name           string   `json:"name"`
	Description    string   `json:"description,omitempty"`
	Version        string   `json:"version,omitempty"`
	InstantiatedAt int64    `json:"instantiated_at"`
	Agents         []string `json:"agents"`
	Teams          []string `json:"teams"`
	Workflows      []string `json:"workflows"`
	Databases      []string `json:"databases"`
}

func (s *Server) getInfo(w http.ResponseWriter, _ *http.Request) error {
	resp := infoResponse{
		OSID: s.cfg.ID, Name: s.cfg.Name, Description: s.cfg.Description, Version: s.cfg.Version,
		InstantiatedAt: s.startedAt.Unix(),
		Agents:         []string{}, Teams: []string{}, Workflows: []string{}, Databases: []string{},
	}
	for _, a := range s.cfg.Agents {
		resp.Agents = append(resp.Agents, a.ID())
	}
	for _, t := range s.cfg.Teams {
		resp.Teams = append(resp.Teams, t.ID())
	}
	for _, wf := range s.cfg.Workflows {
		resp.Workflows = append(resp.Workflows, wf.ID())
	}
	for _, d := range s.dbs {
		resp.Databases = append(resp.Databases, d.ID)
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}
