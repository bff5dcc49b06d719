package agentos

import (
	"net/http"
	"slices"
)

func (s *Server) getRoot(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{
		"id":          s.cfg.ID,
		"name":        s.cfg.Name,
		"description": s.cfg.Description,
		"version":     s.cfg.Version,
	})
	return nil
}

type componentSummary struct {
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	DBID        string `json:"db_id,omitempty"`
}

type domainDB struct {
	DBID         string            `json:"db_id"`
	DomainConfig map[string]string `json:"domain_config"`
}

type domainConfig struct {
	DisplayName string     `json:"display_name"`
	DBs         []domainDB `json:"dbs"`
}

type configResponse struct {
	OSID            string             `json:"os_id"`
	Name            string             `json:"name"`
	Description     string             `json:"description,omitempty"`
	AvailableModels []string           `json:"available_models"`
	Databases       []string           `json:"databases"`
	Chat            map[string]any     `json:"chat"`
	Session         *domainConfig      `json:"session,omitempty"`
	Memory          *domainConfig      `json:"memory,omitempty"`
	Learning        *domainConfig      `json:"learning,omitempty"`
	Evals           *domainConfig      `json:"evals,omitempty"`
	Metrics         *domainConfig      `json:"metrics,omitempty"`
	Traces          *domainConfig      `json:"traces,omitempty"`
	Agents          []componentSummary `json:"agents"`
	Teams           []componentSummary `json:"teams"`
	Workflows       []componentSummary `json:"workflows"`
	Interfaces      []any              `json:"interfaces"`
}

func (s *Server) getConfig(w http.ResponseWriter, _ *http.Request) error {
	resp := configResponse{
		OSID:            s.cfg.ID,
		Name:            s.cfg.Name,
		Description:     s.cfg.Description,
		AvailableModels: []string{},
		Databases:       []string{},
		Chat:            map[string]any{"quick_prompts": map[string]any{}},
		Agents:          []componentSummary{},
		Teams:           []componentSummary{},
		Workflows:       []componentSummary{},
		Interfaces:      []any{},
	}
	for _, d := range s.dbs {
		resp.Databases = append(resp.Databases, d.ID)
	}
	if len(s.dbs) > 0 {
		// Each domain lists the databases its routes read (db_id), each
		// shown under its id, as Agno's: clients pick a domain's database
		// from these, and tell two databases apart by the name.
		domain := func(name string) *domainConfig {
			dc := &domainConfig{DisplayName: name}
			for _, d := range s.dbs {
				dc.DBs = append(dc.DBs, domainDB{DBID: d.ID, DomainConfig: map[string]string{"display_name": d.ID}})
			}
			return dc
		}
		resp.Session, resp.Memory, resp.Metrics = domain("Sessions"), domain("Memory"), domain("Metrics")
		resp.Learning, resp.Evals, resp.Traces = domain("Learnings"), domain("Evals"), domain("Traces")
	}
	for _, a := range s.cfg.Agents {
		cfg := a.Config()
		sum := componentSummary{ID: a.ID(), Name: a.Name(), Description: cfg.Description}
		if cfg.DB != nil {
			sum.DBID = cfg.DB.ID
		}
		resp.Agents = append(resp.Agents, sum)
		if cfg.Model != nil {
			if id := cfg.Model.Info().ID; id != "" && !slices.Contains(resp.AvailableModels, id) {
				resp.AvailableModels = append(resp.AvailableModels, id)
			}
		}
	}
	for _, t := range s.cfg.Teams {
		sum := componentSummary{ID: t.ID(), Name: t.Name(), Description: t.Config().Description}
		if d := t.DB(); d != nil {
			sum.DBID = d.ID
		}
		resp.Teams = append(resp.Teams, sum)
		if id := t.ModelInfo().ID; id != "" && !slices.Contains(resp.AvailableModels, id) {
			resp.AvailableModels = append(resp.AvailableModels, id)
		}
	}
	for _, wf := range s.cfg.Workflows {
		sum := componentSummary{ID: wf.ID(), Name: wf.Name(), Description: wf.Config().Description}
		if d := wf.DB(); d != nil {
			sum.DBID = d.ID
		}
		resp.Workflows = append(resp.Workflows, sum)
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}
