package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/modelspec"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/tool/builtin"
)

// LoadAgent reads one agent declaration (the shape of an `agents:` entry) from a
// YAML or JSON file, for `agentry run --config FILE`. Unknown keys, renamed 2.x
// keys and removed settings are errors naming the key and line.
func LoadAgent(path string) (Agent, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Agent{}, fmt.Errorf("config: %w", err)
	}
	return ParseAgent(data, path)
}

// ParseAgent decodes one agent declaration (YAML, which accepts JSON too).
func ParseAgent(data []byte, filename string) (Agent, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Agent{}, &Error{File: filename, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(root.Content) == 0 {
		return Agent{}, &Error{File: filename, Msg: "empty agent file: write at least `model: provider:model_id`"}
	}
	if err := checkNames(root.Content[0], filename, ""); err != nil {
		return Agent{}, err
	}
	var a Agent
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil && !errors.Is(err, io.EOF) {
		return Agent{}, &Error{File: filename, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	return a, nil
}

// Build turns a declaration into an agent storing in d (nil: no storage).
// Tools are looked up among the built-in tools.
func (a Agent) Build(d *db.DB) (*agent.Agent, error) {
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
		ToolCallLimit: a.ToolCallLimit, UpdateMemoryOnRun: a.UpdateMemoryOnRun,
		SearchPastSessions: a.SearchPastSessions, NumPastSessionsToSearch: a.NumPastSessionsToSearch,
		Metadata: a.Metadata,
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
	for _, t := range a.Tools {
		var tl tool.Tool
		if tl, err = builtin.New(t.Name); err != nil {
			return nil, fmt.Errorf("config: %s: %w", where, err)
		}
		cfg.Tools = append(cfg.Tools, tl)
	}
	return agent.New(cfg)
}
