package agentos

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
)

// modelResponse is AgentOS's {name, model, provider}.
type modelResponse struct {
	Name     string `json:"name,omitempty"`
	Model    string `json:"model,omitempty"`
	Provider string `json:"provider,omitempty"`
}

func newModelResponse(m model.Model) *modelResponse {
	if m == nil {
		return nil
	}
	info := m.Info()
	if info == (model.Info{}) {
		return nil
	}
	return &modelResponse{Name: info.Name, Model: info.ID, Provider: info.Provider}
}

// agentResponse mirrors AgentOS's AgentResponse; like Agno, sections holding
// only defaults are omitted.
type agentResponse struct {
	ID string `json:"id"`
	// IsComponent: a stored component (the registry), not the config file's.
	IsComponent   bool           `json:"is_component"`
	Name          string         `json:"name,omitempty"`
	DBID          string         `json:"db_id,omitempty"`
	Description   string         `json:"description,omitempty"`
	Model         *modelResponse `json:"model,omitempty"`
	Tools         map[string]any `json:"tools,omitempty"`
	Sessions      map[string]any `json:"sessions,omitempty"`
	Reasoning     map[string]any `json:"reasoning,omitempty"`
	SystemMessage map[string]any `json:"system_message,omitempty"`
	Memory        map[string]any `json:"memory,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
}

func newAgentResponse(a *agent.Agent) agentResponse {
	cfg := a.Config()
	resp := agentResponse{ID: a.ID(), Name: a.Name(), Description: cfg.Description, Model: newModelResponse(cfg.Model), Metadata: cfg.Metadata}
	if cfg.DB != nil {
		resp.DBID = cfg.DB.ID
	}
	tools := map[string]any{}
	if specs := a.Tools(); len(specs) > 0 {
		tools["tools"] = specs
	}
	if cfg.ToolCallLimit > 0 {
		tools["tool_call_limit"] = cfg.ToolCallLimit
	}
	if cfg.ToolChoice != "" {
		tools["tool_choice"] = cfg.ToolChoice
	}
	resp.Tools = nonEmpty(tools)
	sessions := map[string]any{}
	if cfg.AddHistoryToContext {
		sessions["add_history_to_context"] = true
	}
	if cfg.NumHistoryRuns != agent.DefaultNumHistoryRuns {
		sessions["num_history_runs"] = cfg.NumHistoryRuns
	}
	resp.Sessions = nonEmpty(sessions)
	if m := newModelResponse(cfg.ReasoningModel); m != nil {
		resp.Reasoning = map[string]any{"reasoning_model": m}
	}
	sys := map[string]any{}
	if cfg.SystemMessage != "" {
		sys["system_message"] = cfg.SystemMessage
	}
	if cfg.Description != "" {
		sys["description"] = cfg.Description
	}
	if len(cfg.Instructions) > 0 {
		sys["instructions"] = cfg.Instructions
	}
	if cfg.ExpectedOutput != "" {
		sys["expected_output"] = cfg.ExpectedOutput
	}
	if cfg.AdditionalContext != "" {
		sys["additional_context"] = cfg.AdditionalContext
	}
	if cfg.Markdown {
		sys["markdown"] = true
	}
	if cfg.AddDatetimeToContext {
		sys["add_datetime_to_context"] = true
	}
	resp.SystemMessage = nonEmpty(sys)
	return resp
}

func nonEmpty(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}

// listAgents lists the configured agents, then the stored ones the caller
// sees (as Agno 3.0 lists its registry's, is_component true).
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) error {
	out := make([]agentResponse, 0, len(s.cfg.Agents))
	for _, a := range s.cfg.Agents {
		if s.mayRead(r, "agents", a.ID()) {
			out = append(out, newAgentResponse(a))
		}
	}
	for _, t := range s.storedTargets(r.Context(), db.ComponentAgent) {
		if a, ok := t.(*agent.Agent); ok && s.mayRead(r, "agents", a.ID()) {
			res := newAgentResponse(a)
			res.IsComponent = true
			out = append(out, res)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "agent_id")
	if a, ok := s.agents[id]; ok {
		writeJSON(w, http.StatusOK, newAgentResponse(a))
		return nil
	}
	if a, ok := s.storedOne(r.Context(), db.ComponentAgent, id).(*agent.Agent); ok {
		res := newAgentResponse(a)
		res.IsComponent = true
		writeJSON(w, http.StatusOK, res)
		return nil
	}
	return errorf(http.StatusNotFound, "Agent not found")
}
