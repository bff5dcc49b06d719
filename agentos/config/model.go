package config

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentryhq/agentry/internal/modelspec"
	"github.com/agentryhq/agentry/model"
)

// Model is an agent's model: the "provider:model_id" string, or a mapping
// with that spec under id (or provider and id apart), an optional base_url and
// the model's parameters:
//
//	model:
//	  id: openai:gpt-4o-mini
//	  temperature: 0.2
//	  max_tokens: 800
//	  stop: ["END"]
//	  seed: 7
//	  presence_penalty: 0.1
//	  frequency_penalty: 0.1
//	  reasoning_effort: high       # minimal, low, medium, high
//	  thinking_budget: 2048        # Anthropic, Bedrock Claude, Gemini
//	  include_thoughts: true       # Gemini thought summaries, Responses summaries
//	  response_format: json_object # or {name, schema, strict}
//	  tool_choice: auto
//	  parallel_tool_calls: false
//	  timeout: 60s                 # or seconds
//	  extra_headers: {X-Team: a}
//	  extra_body: {service_tier: flex}
//
// A parameter the provider cannot take stops the start with an error naming it.
type Model struct {
	Spec    string
	BaseURL string
	Params  model.Params
}

// modelKeys are the keys a model mapping takes.
var modelKeys = []string{"id", "provider", "base_url", "temperature", "top_p", "max_tokens", "stop", "seed",
	"presence_penalty", "frequency_penalty", "reasoning_effort", "thinking_budget", "include_thoughts",
	"response_format", "tool_choice", "parallel_tool_calls", "timeout", "extra_headers", "extra_body"}

// UnmarshalYAML reads the string or mapping form; unknown keys are errors.
func (m *Model) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&m.Spec)
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: model must be \"provider:model_id\" or a mapping with id and parameters", n.Line)
	}
	var provider string
	p := &m.Params
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var err error
		switch k.Value {
		case "id":
			err = v.Decode(&m.Spec)
		case "provider":
			err = v.Decode(&provider)
		case "base_url":
			err = v.Decode(&m.BaseURL)
		case "temperature":
			err = v.Decode(&p.Temperature)
		case "top_p":
			err = v.Decode(&p.TopP)
		case "max_tokens":
			err = v.Decode(&p.MaxTokens)
		case "stop":
			var s StringList
			err = v.Decode(&s)
			p.Stop = s
		case "seed":
			err = v.Decode(&p.Seed)
		case "presence_penalty":
			err = v.Decode(&p.PresencePenalty)
		case "frequency_penalty":
			err = v.Decode(&p.FrequencyPenalty)
		case "reasoning_effort":
			err = v.Decode(&p.ReasoningEffort)
		case "thinking_budget":
			err = v.Decode(&p.ThinkingBudget)
		case "include_thoughts":
			err = v.Decode(&p.IncludeThoughts)
		case "tool_choice":
			err = v.Decode(&p.ToolChoice)
		case "parallel_tool_calls":
			err = v.Decode(&p.ParallelToolCalls)
		case "timeout":
			p.Timeout, err = decodeTimeout(v)
		case "extra_headers":
			err = v.Decode(&p.ExtraHeaders)
		case "extra_body":
			err = v.Decode(&p.ExtraBody)
		case "response_format":
			p.ResponseFormat, err = decodeResponseFormat(v)
		default:
			return fmt.Errorf("line %d: %s", k.Line, unknownKey("the model mapping", k.Value, modelKeys))
		}
		if err != nil {
			return fmt.Errorf("line %d: model.%s: %s", v.Line, k.Value, strings.TrimPrefix(err.Error(), "yaml: "))
		}
	}
	if provider != "" {
		if strings.Contains(m.Spec, ":") {
			return fmt.Errorf("line %d: model: give either provider and id, or id as \"provider:model_id\"", n.Line)
		}
		m.Spec = provider + ":" + m.Spec
	}
	if m.Spec == "" {
		return fmt.Errorf("line %d: model: id is required (\"provider:model_id\")", n.Line)
	}
	return nil
}

// decodeTimeout reads "60s"-style durations or a number of seconds.
func decodeTimeout(v *yaml.Node) (time.Duration, error) {
	if f, err := strconv.ParseFloat(v.Value, 64); err == nil {
		if !durationOK(f, time.Second) {
			return 0, fmt.Errorf("%q: use a number of seconds from 0 to %d", v.Value, int64(math.MaxInt64/time.Second))
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v.Value)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a duration (\"60s\") nor seconds", v.Value)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q must not be negative", v.Value)
	}
	return d, nil
}

// decodeResponseFormat reads "json_object" (JSON mode) or {name, schema, strict}.
func decodeResponseFormat(v *yaml.Node) (*model.ResponseFormat, error) {
	if v.Kind == yaml.ScalarNode {
		if v.Value != "json_object" {
			return nil, fmt.Errorf("%q: use json_object or a mapping with name and schema", v.Value)
		}
		return &model.ResponseFormat{}, nil
	}
	var raw struct {
		Name   string         `yaml:"name"`
		Schema map[string]any `yaml:"schema"`
		Strict bool           `yaml:"strict"`
	}
	if err := v.Decode(&raw); err != nil {
		return nil, err
	}
	if len(raw.Schema) == 0 {
		return nil, fmt.Errorf("a schema is required (or write json_object for any JSON)")
	}
	schema, err := json.Marshal(raw.Schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &model.ResponseFormat{Name: raw.Name, Schema: schema, Strict: raw.Strict}, nil
}

// New builds the model.
func (m Model) New() (model.Model, error) {
	return modelspec.New(m.Spec, modelspec.Options{BaseURL: m.BaseURL, Params: m.Params})
}
