package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agent/guardrail"
	"github.com/agentryhq/agentry/tool"
	"gopkg.in/yaml.v3"
)

// Hook names a built-in hook with its options, in pre_hooks, post_hooks or
// tool_hooks: a name, or {name, options}.
type Hook struct {
	Name    string
	Options map[string]any
}

// UnmarshalYAML reads the name or mapping form; unknown keys are errors.
func (h *Hook) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*h = Hook{Name: n.Value}
		return nil
	case yaml.MappingNode:
		var out Hook
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			switch key.Value {
			case "name":
				if val.Kind != yaml.ScalarNode {
					return fmt.Errorf("line %d: hook name must be a string", val.Line)
				}
				out.Name = val.Value
			case "options":
				if err := val.Decode(&out.Options); err != nil {
					return err
				}
			default:
				return fmt.Errorf("line %d: field %s not found in hook (allowed: name, options)", key.Line, key.Value)
			}
		}
		*h = out
		return nil
	}
	return fmt.Errorf("line %d: a hook is a name or {name, options}", n.Line)
}

// Guardrail and hook names a config file may use.
const (
	HookPIIDetection     = "pii_detection"
	HookPromptInjection  = "prompt_injection"
	HookOpenAIModeration = "openai_moderation"
	HookLog              = "log"
)

// preHookNames and postHookNames are the guardrails each list takes (Agno's
// class names are accepted too).
var (
	preHookNames  = []string{HookPIIDetection, HookPromptInjection, HookOpenAIModeration}
	postHookNames = []string{HookPIIDetection, HookOpenAIModeration}
	agnoHookNames = map[string]string{
		"PIIDetectionGuardrail": HookPIIDetection, "PromptInjectionGuardrail": HookPromptInjection,
		"OpenAIModerationGuardrail": HookOpenAIModeration,
	}
)

// piiOptions are PIIDetectionGuardrail's parameters.
type piiOptions struct {
	MaskPII               bool              `json:"mask_pii"`
	EnableSSNCheck        *bool             `json:"enable_ssn_check"`
	EnableCreditCardCheck *bool             `json:"enable_credit_card_check"`
	EnableEmailCheck      *bool             `json:"enable_email_check"`
	EnablePhoneCheck      *bool             `json:"enable_phone_check"`
	CustomPatterns        map[string]string `json:"custom_patterns"`
}

type injectionOptions struct {
	InjectionPatterns []string `json:"injection_patterns"`
}

type moderationOptions struct {
	ModerationModel    string   `json:"moderation_model"`
	RaiseForCategories []string `json:"raise_for_categories"`
	APIKey             string   `json:"api_key"`
	BaseURL            string   `json:"base_url"`
	// Timeout in seconds.
	Timeout float64 `json:"timeout"`
}

// decodeOptions decodes a hook's options strictly into v.
func decodeOptions(name string, opts map[string]any, v any) error {
	if len(opts) == 0 {
		return nil
	}
	b, err := json.Marshal(opts)
	if err != nil {
		return fmt.Errorf("%s options: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s options: %s", name, strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// guardrail builds the named guardrail; post says it is for post_hooks.
func (h Hook) guardrail(post bool) (any, error) {
	name := h.Name
	if n, ok := agnoHookNames[name]; ok {
		name = n
	}
	allowed := preHookNames
	list := "pre_hooks"
	if post {
		allowed, list = postHookNames, "post_hooks"
	}
	if !slices.Contains(allowed, name) {
		return nil, fmt.Errorf("unknown %s entry %q (available: %s)", list, h.Name, strings.Join(allowed, ", "))
	}
	switch name {
	case HookPIIDetection:
		var o piiOptions
		if err := decodeOptions(name, h.Options, &o); err != nil {
			return nil, err
		}
		cfg := guardrail.PIIConfig{Mask: o.MaskPII, Custom: o.CustomPatterns}
		for kind, on := range map[string]*bool{guardrail.PIISSN: o.EnableSSNCheck, guardrail.PIICreditCard: o.EnableCreditCardCheck,
			guardrail.PIIEmail: o.EnableEmailCheck, guardrail.PIIPhone: o.EnablePhoneCheck} {
			if on != nil && !*on {
				cfg.Skip = append(cfg.Skip, kind)
			}
		}
		return guardrail.NewPII(cfg)
	case HookPromptInjection:
		var o injectionOptions
		if err := decodeOptions(name, h.Options, &o); err != nil {
			return nil, err
		}
		return guardrail.NewPromptInjection(o.InjectionPatterns), nil
	default: // HookOpenAIModeration
		var o moderationOptions
		if err := decodeOptions(name, h.Options, &o); err != nil {
			return nil, err
		}
		return guardrail.NewModeration(guardrail.ModerationConfig{APIKey: o.APIKey, BaseURL: o.BaseURL, Model: o.ModerationModel,
			Categories: o.RaiseForCategories, Timeout: time.Duration(o.Timeout * float64(time.Second))})
	}
}

// toolHook builds a tool_hooks entry.
func (h Hook) toolHook() (agent.ToolHook, error) {
	if h.Name != HookLog {
		return nil, fmt.Errorf("unknown tool_hooks entry %q (available: %s; other tool hooks are Go functions: agent.Config.ToolHooks)", h.Name, HookLog)
	}
	if len(h.Options) > 0 {
		return nil, fmt.Errorf("tool hook %s takes no options", HookLog)
	}
	return agent.LogToolCalls(nil), nil
}

// controls applies the agent-control keys of a to cfg (hooks, schemas,
// second models, context and retry settings). Every error names its key.
func (a Agent) controls(cfg *agent.Config) error {
	for i, h := range a.PreHooks {
		g, err := h.guardrail(false)
		if err != nil {
			return fmt.Errorf("pre_hooks[%d]: %w", i, err)
		}
		pre, ok := g.(agent.PreHook)
		if !ok {
			return fmt.Errorf("pre_hooks[%d]: %s cannot check input", i, h.Name)
		}
		cfg.PreHooks = append(cfg.PreHooks, pre)
	}
	for i, h := range a.PostHooks {
		g, err := h.guardrail(true)
		if err != nil {
			return fmt.Errorf("post_hooks[%d]: %w", i, err)
		}
		post, ok := g.(agent.PostHook)
		if !ok {
			return fmt.Errorf("post_hooks[%d]: %s cannot check output", i, h.Name)
		}
		cfg.PostHooks = append(cfg.PostHooks, post)
	}
	for i, h := range a.ToolHooks {
		th, err := h.toolHook()
		if err != nil {
			return fmt.Errorf("tool_hooks[%d]: %w", i, err)
		}
		cfg.ToolHooks = append(cfg.ToolHooks, th)
	}
	if len(a.InputSchema) > 0 {
		raw, err := schemaJSON("input_schema", a.InputSchema)
		if err != nil {
			return err
		}
		cfg.InputSchema = raw
	}
	if len(a.OutputSchema) > 0 {
		raw, err := schemaJSON("output_schema", a.OutputSchema)
		if err != nil {
			return err
		}
		if a.StrictOutput {
			if _, _, err := tool.StrictSchema(raw); err != nil {
				return fmt.Errorf("output_schema has no strict form (strict_output): %w", err)
			}
		}
		cfg.OutputSchema = raw
	}
	cfg.StrictOutput = a.StrictOutput
	var err error
	if a.ParserModel.Spec != "" {
		if cfg.ParserModel, err = a.ParserModel.New(); err != nil {
			return fmt.Errorf("parser_model: %w", err)
		}
	}
	if a.OutputModel.Spec != "" {
		if cfg.OutputModel, err = a.OutputModel.New(); err != nil {
			return fmt.Errorf("output_model: %w", err)
		}
	}
	delay := -1.0 // absent: agent.DefaultDelayBetweenRetries
	if a.DelayBetweenRetries != nil {
		delay = *a.DelayBetweenRetries
	}
	if a.CacheTTL < 0 || a.DelayBetweenRetries != nil && delay < 0 || a.Retries < 0 {
		return fmt.Errorf("cache_ttl, retries and delay_between_retries must not be negative")
	}
	for _, s := range []struct {
		key string
		v   float64
	}{{"cache_ttl", a.CacheTTL}, {"delay_between_retries", max(delay, 0)}} {
		if !durationOK(s.v, time.Second) {
			return fmt.Errorf("%s %v: use a number of seconds from 0 to %d", s.key, s.v, int64(math.MaxInt64/time.Second))
		}
	}
	cfg.ParserModelPrompt, cfg.OutputModelPrompt = a.ParserModelPrompt, a.OutputModelPrompt
	cfg.CacheResults, cfg.CacheTTL = a.CacheResults, time.Duration(a.CacheTTL*float64(time.Second))
	cfg.AdditionalContext, cfg.ExpectedOutput = a.AdditionalContext, a.ExpectedOutput
	cfg.AddDatetimeToContext, cfg.Timezone = a.AddDatetimeToContext, a.TimezoneIdentifier
	cfg.AddLocationToContext, cfg.Location = a.AddLocationToContext, a.Location
	cfg.AddNameToContext, cfg.ToolChoice = a.AddNameToContext, a.ToolChoice
	cfg.Retries, cfg.ExponentialBackoff = a.Retries, a.ExponentialBackoff
	if a.DelayBetweenRetries != nil { // absent: zero, the agent's default
		cfg.DelayBetweenRetries = time.Duration(delay * float64(time.Second))
		if cfg.DelayBetweenRetries == 0 { // 0 (or under a nanosecond): none
			cfg.DelayBetweenRetries = agent.NoDelayBetweenRetries
		}
	}
	cfg.DebugMode = a.DebugMode
	return nil
}

// schemaJSON turns a YAML schema mapping (input_schema, output_schema:
// key) into a JSON Schema, refused as the agent would refuse it
// (agent.CheckSchema).
func schemaJSON(key string, m map[string]any) ([]byte, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if err := agent.CheckSchema(raw, key); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), agent.ErrInvalidSchema.Error()+": "))
	}
	return raw, nil
}
