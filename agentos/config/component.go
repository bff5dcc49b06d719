package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Stored components: agents, teams and workflows kept in the database
// (Agno 3.0's agno_component_configs) are read by the same decoder as
// `agents:`, `teams:` and `workflows:` entries, after the shapes Agno's
// to_dict writes are mapped onto them:
//
//   - model: {"provider": "OpenAI", "id": "gpt-4o", "name": "OpenAIChat"}
//     reads as the mapping {provider: openai, id: gpt-4o} (name is Agno's
//     class name); a team's model becomes "provider:id";
//   - a team's members [{"type": "agent", "agent_id": "x"}, {"type":
//     "team", "team_id": "y"}] read as [x, y];
//   - a workflow step {"type": "Step", "name": "s", "agent_id": "x"}
//     reads as {name: s, agent: x} (team_id as team:, workflow_id as
//     workflow:); step_id and
//     description are dropped;
//   - db is dropped: a stored component always stores in the server's
//     database.
//
// Settings that would let whoever may write a component act on the server
// itself are refused: mcp (starts processes), media_storage, code_mode, a
// model's, a moderation hook's or a tool's base_url (it would receive the
// server's API key), a tool's allow_networks, allow_private_hosts and ports,
// built-in tools outside ComponentPolicy.Tools, and model providers outside
// ComponentPolicy.Providers (scripted reads a server file). Any other key
// the declaration does not know is an error naming it.

// ErrComponentConfig marks a stored component's config that cannot be
// served; the message says why.
var ErrComponentConfig = errors.New("config: invalid component config")

// ComponentPolicy limits what stored components may use.
type ComponentPolicy struct {
	// Providers are the model providers a stored config may name; nil
	// allows every provider but scripted.
	Providers []string
	// Tools are the built-in tools a stored agent may use; nil allows
	// DefaultComponentTools.
	Tools []string
}

// DefaultComponentTools are the built-in tools stored agents may use by
// default: none of them reaches the server's files, shell, databases or
// internal network.
var DefaultComponentTools = []string{"calculator", "current_time", "web_search"}

// refusedKeys are settings a stored component may not carry.
var refusedKeys = map[string]string{
	"mcp":           "mcp starts processes or connects on the server",
	"media_storage": "media_storage names server storage",
	"code_mode":     "code_mode runs code on the server",
}

// refusedToolOptions are tool options a stored component may not set:
// base_url receives the server's key of a keyed backend (web_search's
// brave, tavily); the others widen the tool's network guard to the
// server's private networks.
var refusedToolOptions = []string{"base_url", "allow_networks", "allow_private_hosts", "ports"}

func componentErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrComponentConfig, fmt.Sprintf(format, args...))
}

// CheckComponentID reports whether id may name a stored component (it is
// a URL path segment: letters, digits, '.', '_' and '-').
func CheckComponentID(id string) error {
	if id == "" || len(id) > 255 || !idPattern.MatchString(id) {
		return componentErr("component_id %q may only use letters, digits, '.', '_' and '-' (1 to 255 of them)", id)
	}
	return nil
}

// ParseAgentComponent reads a stored agent's config.
func ParseAgentComponent(raw []byte, p ComponentPolicy) (Agent, error) {
	m, err := componentObject(raw)
	if err != nil {
		return Agent{}, err
	}
	if err := normalizeModels(m, false); err != nil {
		return Agent{}, err
	}
	var a Agent
	if err := decodeComponent(m, &a); err != nil {
		return Agent{}, err
	}
	for _, t := range a.Tools {
		if !slices.Contains(p.tools(), t.Name) {
			return Agent{}, componentErr("tool %q is not allowed in a stored component (allowed: %s)", t.Name, strings.Join(p.tools(), ", "))
		}
		for _, k := range refusedToolOptions {
			if _, ok := t.Options[k]; ok {
				return Agent{}, componentErr("tool %q: option %s is not allowed in a stored component (it could send the server's API keys elsewhere or reach its internal network); declare the agent in the server's config file", t.Name, k)
			}
		}
	}
	specs := []string{a.Model.Spec, a.MemoryModel.Spec, a.ReasoningModel, a.ParserModel.Spec, a.OutputModel.Spec}
	for _, f := range a.FallbackModels {
		specs = append(specs, f.Spec)
	}
	// base_url would send the server's API key to whatever host it names
	// (Agno's model to_dict writes none).
	models := append([]Model{a.Model, a.MemoryModel, a.ParserModel, a.OutputModel}, a.FallbackModels...)
	for _, m := range models {
		if m.BaseURL != "" {
			return Agent{}, componentErr("model %q: base_url is not allowed in a stored component (the server's API key would go to it); declare the agent in the server's config file", m.Spec)
		}
	}
	for _, hs := range []struct {
		key   string
		hooks []Hook
	}{{"pre_hooks", a.PreHooks}, {"post_hooks", a.PostHooks}} {
		key := hs.key
		for i, h := range hs.hooks {
			if _, ok := h.Options["base_url"]; ok {
				return Agent{}, componentErr("%s[%d] (%s): base_url is not allowed in a stored component (the server's API key would go to it); declare the agent in the server's config file", key, i, h.Name)
			}
		}
	}
	if err := p.checkProviders(specs...); err != nil {
		return Agent{}, err
	}
	c := Config{Agents: []Agent{a}, agentFile: true}
	var errs []error
	c.checkAgent(func(format string, args ...any) { errs = append(errs, componentErr(format, args...)) }, 0, false)
	if a.Knowledge {
		errs = append(errs, componentErr("knowledge: true is not available to stored components"))
	}
	return a, errors.Join(errs...)
}

// ParseTeamComponent reads a stored team's config.
func ParseTeamComponent(raw []byte, p ComponentPolicy) (Team, error) {
	m, err := componentObject(raw)
	if err != nil {
		return Team{}, err
	}
	if err := normalizeModels(m, true); err != nil {
		return Team{}, err
	}
	if members, ok := m["members"].([]any); ok {
		for i, v := range members {
			id, err := memberID(v)
			if err != nil {
				return Team{}, componentErr("members[%d]: %v", i, err)
			}
			members[i] = id
		}
	}
	var t Team
	if err := decodeComponent(m, &t); err != nil {
		return Team{}, err
	}
	if err := p.checkProviders(t.Model, t.MemoryModel); err != nil {
		return Team{}, err
	}
	return t, nil
}

// ParseWorkflowComponent reads a stored workflow's config.
func ParseWorkflowComponent(raw []byte, p ComponentPolicy) (Workflow, error) {
	m, err := componentObject(raw)
	if err != nil {
		return Workflow{}, err
	}
	if err := normalizeSteps(m["steps"], "steps"); err != nil {
		return Workflow{}, err
	}
	var w Workflow
	if err := decodeComponent(m, &w); err != nil {
		return Workflow{}, err
	}
	return w, nil
}

func (p ComponentPolicy) tools() []string {
	if p.Tools == nil {
		return DefaultComponentTools
	}
	return p.Tools
}

func (p ComponentPolicy) checkProviders(specs ...string) error {
	for _, s := range specs {
		if s == "" {
			continue
		}
		// The provider as modelspec reads it (trimmed, lower case):
		// "Scripted:/etc/passwd" is the scripted provider.
		provider, _, _ := strings.Cut(s, ":")
		provider = strings.ToLower(strings.TrimSpace(provider))
		switch {
		case p.Providers == nil && provider == "scripted":
			return componentErr("model %q: the scripted provider is not allowed in stored components", s)
		case p.Providers != nil && !slices.ContainsFunc(p.Providers, func(a string) bool { return strings.EqualFold(strings.TrimSpace(a), provider) }):
			return componentErr("model %q: provider %q is not allowed in stored components (allowed: %s)", s, provider, strings.Join(p.Providers, ", "))
		}
	}
	return nil
}

// componentObject decodes the config JSON object and drops and refuses
// keys as the package comment says.
func componentObject(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, componentErr("a config is a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, componentErr("a config is one JSON object")
	}
	delete(m, "db")
	for k, why := range refusedKeys {
		if _, ok := m[k]; ok {
			return nil, componentErr("%s is not allowed in a stored component (%s); declare the component in the server's config file", k, why)
		}
	}
	return m, nil
}

// normalizeModels maps Agno's model objects; flat makes them
// "provider:id" strings (a team's model fields are strings).
func normalizeModels(m map[string]any, flat bool) error {
	for _, k := range []string{"model", "memory_model", "reasoning_model", "parser_model", "output_model"} {
		v, ok := m[k].(map[string]any)
		if !ok {
			continue
		}
		delete(v, "name")
		if p, ok := v["provider"].(string); ok {
			v["provider"] = strings.ToLower(p)
		}
		if flat || k == "reasoning_model" {
			id, _ := v["id"].(string)
			p, _ := v["provider"].(string)
			if len(v) > 2 || id == "" || (len(v) == 2 && p == "") {
				return componentErr("%s: write {\"provider\": …, \"id\": …} or \"provider:model_id\" (no parameters here)", k)
			}
			if p != "" {
				id = p + ":" + id
			}
			m[k] = id
		}
	}
	if fb, ok := m["fallback_models"].([]any); ok {
		for _, v := range fb {
			if mv, ok := v.(map[string]any); ok {
				delete(mv, "name")
				if p, ok := mv["provider"].(string); ok {
					mv["provider"] = strings.ToLower(p)
				}
			}
		}
	}
	return nil
}

func memberID(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case map[string]any:
		key := "agent_id"
		switch x["type"] {
		case "agent", nil:
		case "team":
			key = "team_id"
		default:
			return "", fmt.Errorf("type must be agent or team")
		}
		if id, ok := x[key].(string); ok && id != "" {
			return id, nil
		}
		if id, ok := x["team_id"].(string); ok && x["type"] == nil && id != "" {
			return id, nil
		}
		return "", fmt.Errorf("a member is an id or {\"type\": \"agent\", \"agent_id\": …} / {\"type\": \"team\", \"team_id\": …}")
	}
	return "", fmt.Errorf("a member is an id or an object")
}

// normalizeSteps maps Agno's step objects onto WorkflowStep, recursively
// through the primitives' steps, else and choices.
func normalizeSteps(v any, where string) error {
	steps, ok := v.([]any)
	if !ok {
		return nil
	}
	for i, s := range steps {
		st, ok := s.(map[string]any)
		if !ok {
			continue
		}
		at := fmt.Sprintf("%s[%d]", where, i)
		if t, ok := st["type"]; ok {
			if t != "Step" {
				return componentErr("%s: type %v: only Step objects (or this server's step shapes) are read", at, t)
			}
			delete(st, "type")
		}
		delete(st, "step_id")
		delete(st, "description")
		for from, to := range map[string]string{"agent_id": "agent", "team_id": "team", "workflow_id": "workflow"} {
			if id, ok := st[from]; ok {
				if _, both := st[to]; both {
					return componentErr("%s: give %s or %s, not both", at, from, to)
				}
				st[to] = id
				delete(st, from)
			}
		}
		for _, k := range []string{"steps", "else", "choices"} {
			if err := normalizeSteps(st[k], at+"."+k); err != nil {
				return err
			}
		}
		for _, k := range []string{"steps", "loop", "parallel", "condition", "router"} {
			if inner, ok := st[k].(map[string]any); ok {
				for _, kk := range []string{"steps", "else", "choices"} {
					if err := normalizeSteps(inner[kk], at+"."+k+"."+kk); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// decodeComponent decodes m into out (a *Agent, *Team or *Workflow) with
// the config file's strict decoder.
func decodeComponent(m map[string]any, out any) error {
	data, err := json.Marshal(m)
	if err != nil {
		return componentErr("%v", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 {
		return componentErr("a config is a JSON object")
	}
	doc := root.Content[0]
	if err := checkNames(doc, "config", ""); err != nil {
		return componentErr("%s", strings.TrimPrefix(err.Error(), "config:1: "))
	}
	if errs := checkKeys(doc, reflect.TypeOf(out).Elem(), "config", ""); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = strings.TrimPrefix(e.Error(), "config:1: ")
		}
		return componentErr("%s", strings.Join(msgs, "; "))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		return componentErr("%s", strings.TrimPrefix(strings.TrimPrefix(decodeError("config", err).Error(), "config:1: "), "config: "))
	}
	return nil
}
