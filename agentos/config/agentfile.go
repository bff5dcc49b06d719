package config

import (
	"errors"
	"fmt"
	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/workflow"
	"strings"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/modelspec"
)

// LoadAgent reads the agent `agentry run --config FILE` runs, with the same
// loader as `agentry serve --config FILE` (see Parse): FILE is one agent (the
// shape of an agents: entry) or a whole configuration, from which id picks the
// agent ("" picks the only one). Environment overrides are serve's and are not
// applied; an agent without an id is allowed.
func LoadAgent(path, id string) (Agent, error) {
	cfg, err := readFile(path)
	if err != nil {
		return Agent{}, err
	}
	var ids []string
	pick := -1
	for i, a := range cfg.Agents {
		ids = append(ids, a.ID)
		if (id == "" && len(cfg.Agents) == 1) || (id != "" && a.ID == id) {
			pick = i
		}
	}
	switch {
	case len(cfg.Agents) == 0:
		return Agent{}, &Error{File: path, Msg: "no agent in this file: write one agent (at least `model: provider:model_id`) or an agents: list"}
	case pick < 0 && id == "":
		return Agent{}, &Error{File: path, Msg: fmt.Sprintf("the file declares %d agents (%s): pick one with --agent ID", len(ids), strings.Join(ids, ", "))}
	case pick < 0:
		return Agent{}, &Error{File: path, Msg: fmt.Sprintf("no agent with id %q (agents: %s)", id, strings.Join(ids, ", "))}
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("config: "+format, args...)) }
	cfg.checkAgent(bad, pick, false)
	if len(errs) > 0 {
		return Agent{}, errors.Join(errs...)
	}
	return cfg.Agents[pick], nil
}

// BuildOptions are what a server gives every agent it builds.
type BuildOptions struct {
	// MediaStorage receives the runs' media (agent.Config.MediaStorage).
	MediaStorage media.Storage
	// OpenMedia opens a team's or workflow's own media_storage (serve:
	// MediaStorage.Open with its data directory); nil refuses one.
	OpenMedia func(*MediaStorage) (media.Storage, error)
	// Instrument, when set, edits each agent's configuration last, before
	// agent.New (the server adds tracing with trace.Instrument).
	Instrument func(*agent.Config)
	// Knowledge is the server's knowledge base, for agents with knowledge: true.
	Knowledge *knowledge.Knowledge
	// WorkflowFunctions are the Go functions workflow steps name
	// (function:, if:, selector:, end_condition:).
	WorkflowFunctions workflow.Functions
	// OnCodeMode, when set, receives each CodeMode built for an agent's or
	// a team's code_mode: its owner closes it, and forgets a session's
	// interpreter and saved state when the session is deleted
	// (agentos.Config.CodeModes).
	OnCodeMode func(*codemode.CodeMode)
}

// mediaFor is a component's media storage: its own media_storage, else
// the server-wide one.
func (o BuildOptions) mediaFor(where string, own *MediaStorage) (media.Storage, error) {
	if own == nil {
		return o.MediaStorage, nil
	}
	if own.Type == "none" {
		return nil, nil
	}
	if o.OpenMedia == nil {
		return nil, fmt.Errorf("config: %s: media_storage is opened by the server: pass BuildOptions.OpenMedia", where)
	}
	s, err := o.OpenMedia(own)
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", where, err)
	}
	return s, nil
}

// Build turns a declaration into an agent storing in d (nil: no storage).
// Tools are looked up among the built-in tools and toolkits, with their options.
func (a Agent) Build(d *db.DB) (*agent.Agent, error) { return a.BuildWith(d, BuildOptions{}) }

// BuildWith is Build with server-wide options.
func (a Agent) BuildWith(d *db.DB, opts BuildOptions) (*agent.Agent, error) {
	if a.MediaStorage != nil && a.MediaStorage.Type != "none" && opts.MediaStorage == nil {
		return nil, fmt.Errorf("config: agent %s: media_storage is opened by the server: open it with MediaStorage.Open and pass it in BuildOptions", a.ID)
	}
	where := "agent"
	if a.ID != "" {
		where = "agent " + a.ID
	}
	if a.Model.Spec == "" {
		return nil, fmt.Errorf("config: %s: model is required (\"provider:model_id\", e.g. \"openai:gpt-4o-mini\")", where)
	}
	m, err := a.Model.New()
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", where, err)
	}
	cfg := agent.Config{
		ID: a.ID, Name: a.Name, Description: a.Description, Model: m,
		Instructions: agent.Instructions(a.Instructions), Markdown: a.Markdown, DB: d,
		AddHistoryToContext: a.AddHistoryToContext, NumHistoryRuns: a.NumHistoryRuns,
		ToolCallLimit: a.ToolCallLimit,
		Metadata:      a.Metadata, OffloadToolResults: a.OffloadToolResults.On(), MediaStorage: opts.MediaStorage,
	}
	if a.Knowledge {
		if opts.Knowledge == nil {
			return nil, fmt.Errorf("config: %s: knowledge: true needs the server's knowledge base (BuildOptions.Knowledge)", where)
		}
		cfg.Knowledge, cfg.AddKnowledgeToContext, cfg.KnowledgeFilters = opts.Knowledge, a.AddKnowledgeToContext, a.KnowledgeFilters
		cfg.SearchKnowledge = a.SearchKnowledge == nil || *a.SearchKnowledge
	} else if a.SearchKnowledge != nil || a.AddKnowledgeToContext || len(a.KnowledgeFilters) > 0 {
		return nil, fmt.Errorf("config: %s: search_knowledge, add_knowledge_to_context and knowledge_filters need knowledge: true", where)
	}
	if err := a.controls(&cfg); err != nil {
		return nil, fmt.Errorf("config: %s: %w", where, err)
	}
	cfg.MemoryConfig = agent.MemoryConfig{UpdateMemoryOnRun: a.UpdateMemoryOnRun, EnableAgenticMemory: a.EnableAgenticMemory,
		AddMemoriesToContext: a.AddMemoriesToContext, EnableSessionSummaries: a.EnableSessionSummaries,
		AddSessionSummaryToContext: a.AddSessionSummaryToContext, SearchPastSessions: a.SearchPastSessions,
		NumPastSessionsToSearch: a.NumPastSessionsToSearch, NumPastSessionRunsInSearch: a.NumPastSessionRunsInSearch}
	if a.MemoryModel.Spec != "" {
		if cfg.MemoryModel, err = a.MemoryModel.New(); err != nil {
			return nil, fmt.Errorf("config: %s: memory_model: %w", where, err)
		}
	}
	for i, fm := range a.FallbackModels {
		f, err := fm.New()
		if err != nil {
			return nil, fmt.Errorf("config: %s: fallback_models[%d]: %w", where, i, err)
		}
		cfg.FallbackModels = append(cfg.FallbackModels, f)
	}
	if a.ReasoningModel != "" {
		if cfg.ReasoningModel, err = modelspec.New(a.ReasoningModel, modelspec.Options{}); err != nil {
			return nil, fmt.Errorf("config: %s: reasoning_model: %w", where, err)
		}
	}
	if cfg.Tools, err = builtinTools(where, a.Tools); err != nil {
		return nil, err
	}
	if cfg.ToolProviders, err = mcpProviders(where, a.MCP); err != nil {
		return nil, err
	}
	if a.CodeMode.on() {
		code := cfg.Tools
		if len(a.CodeMode.Tools) > 0 {
			if code, err = builtinTools(where+": code_mode", a.CodeMode.Tools); err != nil {
				return nil, err
			}
		} else {
			cfg.Tools = nil // the agent's tools move into code
		}
		cm, err := a.CodeMode.build(where, agent.DefaultID(a.ID, a.Name), d, code, cfg.OffloadToolResults)
		if err != nil {
			return nil, err
		}
		cfg.Tools = append(cfg.Tools, cm.Tools()...)
		if opts.OnCodeMode != nil {
			opts.OnCodeMode(cm)
		}
	}
	if opts.Instrument != nil {
		opts.Instrument(&cfg)
	}
	return agent.New(cfg)
}
