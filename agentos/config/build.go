package config

import (
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/modelspec"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// Build turns a team declaration into a team storing in d (nil: no storage).
// Members are looked up by id among agents (the built `agents:` entries).
// opts.MediaStorage receives the leader's media (the server-wide
// media_storage); members keep their own.
func (t Team) Build(d *db.DB, agents map[string]*agent.Agent, opts BuildOptions) (*team.Team, error) {
	where := "team " + t.ID
	if t.Model == "" {
		return nil, fmt.Errorf("config: %s: model is required for the team leader (\"provider:model_id\", e.g. \"openai:gpt-4o-mini\")", where)
	}
	m, err := modelspec.New(t.Model, modelspec.Options{})
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", where, err)
	}
	cfg := team.Config{ID: t.ID, Name: t.Name, Description: t.Description, Model: m, DB: d,
		Instructions: agent.Instructions(t.Instructions), AddHistoryToContext: t.AddHistoryToContext,
		NumHistoryRuns: t.NumHistoryRuns, Metadata: t.Metadata, OffloadToolResults: t.OffloadToolResults.On(),
		MediaStorage: opts.MediaStorage}
	cfg.MemoryConfig = agent.MemoryConfig{UpdateMemoryOnRun: t.UpdateMemoryOnRun, EnableAgenticMemory: t.EnableAgenticMemory,
		AddMemoriesToContext: t.AddMemoriesToContext, EnableSessionSummaries: t.EnableSessionSummaries,
		AddSessionSummaryToContext: t.AddSessionSummaryToContext, SearchPastSessions: t.SearchPastSessions,
		NumPastSessionsToSearch: t.NumPastSessionsToSearch, NumPastSessionRunsInSearch: t.NumPastSessionRunsInSearch}
	if t.MemoryModel != "" {
		if cfg.MemoryModel, err = modelspec.New(t.MemoryModel, modelspec.Options{}); err != nil {
			return nil, fmt.Errorf("config: %s: memory_model: %w", where, err)
		}
	}
	if t.CodeMode.on() {
		code, err := builtinTools(where+": code_mode", t.CodeMode.Tools)
		if err != nil {
			return nil, err
		}
		cm, err := t.CodeMode.build(where, agent.DefaultID(t.ID, t.Name), d, code, cfg.OffloadToolResults)
		if err != nil {
			return nil, err
		}
		cfg.Tools = cm.Tools()
	}
	for _, id := range t.Members {
		a, ok := agents[id]
		if !ok {
			return nil, fmt.Errorf("config: %s: members: no agent with id %q", where, id)
		}
		cfg.Members = append(cfg.Members, a)
	}
	tm, err := team.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", where, err)
	}
	return tm, nil
}

// Build turns a workflow declaration into a workflow storing in d; each step
// names an agent or a team among the built ones.
func (w Workflow) Build(d *db.DB, agents map[string]*agent.Agent, teams map[string]*team.Team) (*workflow.Workflow, error) {
	where := "workflow " + w.ID
	cfg := workflow.Config{ID: w.ID, Name: w.Name, Description: w.Description, DB: d}
	for i, st := range w.Steps {
		step := workflow.Step{Name: st.Name}
		switch {
		case st.Agent != "" && st.Team == "":
			a := agents[st.Agent]
			if a == nil {
				return nil, fmt.Errorf("config: %s: steps[%d]: no agent with id %q", where, i, st.Agent)
			}
			step.Runner = a
		case st.Team != "" && st.Agent == "":
			tm := teams[st.Team]
			if tm == nil {
				return nil, fmt.Errorf("config: %s: steps[%d]: no team with id %q", where, i, st.Team)
			}
			step.Runner = tm
		default:
			return nil, fmt.Errorf("config: %s: steps[%d]: set exactly one of agent or team", where, i)
		}
		cfg.Steps = append(cfg.Steps, step)
	}
	wf, err := workflow.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", where, err)
	}
	return wf, nil
}

// BuildTeamsAndWorkflows builds the declared teams and workflows on d, given
// the agents built from the same file (members and steps refer to them by id).
func (c Config) BuildTeamsAndWorkflows(d *db.DB, agents []*agent.Agent, opts BuildOptions) ([]*team.Team, []*workflow.Workflow, error) {
	byID := make(map[string]*agent.Agent, len(agents))
	for _, a := range agents {
		byID[a.ID()] = a
	}
	teamByID := make(map[string]*team.Team, len(c.Teams))
	var teams []*team.Team
	var workflows []*workflow.Workflow
	var errs []error
	for _, decl := range c.Teams {
		t, err := decl.Build(d, byID, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		teamByID[t.ID()] = t
		teams = append(teams, t)
	}
	for _, decl := range c.Workflows {
		w, err := decl.Build(d, byID, teamByID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		workflows = append(workflows, w)
	}
	return teams, workflows, errors.Join(errs...)
}
