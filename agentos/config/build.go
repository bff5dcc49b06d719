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
// Members are looked up by id among agents (the built `agents:` entries),
// then among teams (member teams, built before it).
// opts.MediaStorage receives the leader's media (the server-wide
// media_storage); members keep their own.
func (t Team) Build(d *db.DB, agents map[string]*agent.Agent, opts BuildOptions, teams ...map[string]*team.Team) (*team.Team, error) {
	where := "team " + t.ID
	if t.Model == "" {
		return nil, fmt.Errorf("config: %s: model is required for the team leader (\"provider:model_id\", e.g. \"openai:gpt-4o-mini\")", where)
	}
	m, err := modelspec.New(t.Model, modelspec.Options{})
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", where, err)
	}
	mode, err := team.ParseMode(t.Mode)
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", where, err)
	}
	ms, err := opts.mediaFor(where, t.MediaStorage)
	if err != nil {
		return nil, err
	}
	cfg := team.Config{ID: t.ID, Name: t.Name, Description: t.Description, Model: m, DB: d,
		Instructions: agent.Instructions(t.Instructions), AddHistoryToContext: t.AddHistoryToContext,
		NumHistoryRuns: t.NumHistoryRuns, Metadata: t.Metadata, OffloadToolResults: t.OffloadToolResults.On(),
		MediaStorage: ms, Mode: mode, RespondDirectly: t.RespondDirectly,
		DelegateToAllMembers: t.DelegateToAllMembers, MaxIterations: t.MaxIterations,
		StreamMemberEvents: t.StreamMemberEvents, StoreMemberResponses: t.StoreMemberResponses,
		MaxConcurrentMembers: t.MaxConcurrentMembers, StoreEvents: t.StoreEvents,
		AddTeamHistoryToMembers: t.AddTeamHistoryToMembers, NumTeamHistoryRuns: t.NumTeamHistoryRuns,
		ShareMemberInteractions: t.ShareMemberInteractions, DetermineInputForMembers: t.DetermineInputForMembers}
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
		if opts.OnCodeMode != nil {
			opts.OnCodeMode(cm)
		}
	}
	for _, id := range t.Members {
		if a, ok := agents[id]; ok {
			cfg.Members = append(cfg.Members, a)
			continue
		}
		var sub *team.Team
		for _, built := range teams {
			if sub = built[id]; sub != nil {
				break
			}
		}
		if sub == nil {
			return nil, fmt.Errorf("config: %s: members: no agent or team with id %q", where, id)
		}
		cfg.Teams = append(cfg.Teams, sub)
	}
	tm, err := team.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", where, err)
	}
	return tm, nil
}

// Build turns a workflow declaration into a workflow storing in d; its
// steps name agents and teams among the built ones (BuildWith also names Go
// functions).
func (w Workflow) Build(d *db.DB, agents map[string]*agent.Agent, teams map[string]*team.Team) (*workflow.Workflow, error) {
	return w.BuildWith(d, agents, teams, BuildOptions{})
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
	for _, decl := range c.teamsInBuildOrder() {
		t, err := decl.Build(d, byID, opts, teamByID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		teamByID[t.ID()] = t
	}
	for _, decl := range c.Teams {
		if t := teamByID[decl.ID]; t != nil {
			teams = append(teams, t)
		}
	}
	wfByID := make(map[string]*workflow.Workflow, len(c.Workflows))
	for _, decl := range c.workflowsInBuildOrder() {
		w, err := decl.BuildNested(d, byID, teamByID, wfByID, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		wfByID[w.ID()] = w
	}
	for _, decl := range c.Workflows {
		if w := wfByID[decl.ID]; w != nil {
			workflows = append(workflows, w)
		}
	}
	return teams, workflows, errors.Join(errs...)
}

// teamsInBuildOrder orders the team declarations so that a member team comes
// before the teams it is a member of (Validate refused cycles; a team in one
// is left out and fails its build as a missing member).
func (c Config) teamsInBuildOrder() []Team {
	byID := make(map[string]int, len(c.Teams))
	for i, t := range c.Teams {
		byID[t.ID] = i
	}
	state := make([]int, len(c.Teams)) // 0 new, 1 visiting, 2 done
	var out []Team
	var visit func(i int)
	visit = func(i int) {
		if state[i] != 0 {
			return
		}
		state[i] = 1
		for _, m := range c.Teams[i].Members {
			if j, ok := byID[m]; ok && state[j] == 0 {
				visit(j)
			}
		}
		state[i] = 2
		out = append(out, c.Teams[i])
	}
	for i := range c.Teams {
		visit(i)
	}
	return out
}
