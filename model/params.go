package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrUnsupportedParam is returned by a provider's New (or by a call whose
// Request sets such a field) when a parameter cannot be sent to that provider.
// Parameters are never dropped silently.
var ErrUnsupportedParam = errors.New("model: parameter not supported by this provider")

// Params are the generation settings a model is built with (Agno's model
// attributes). Zero values mean "provider default": nothing is sent. Each
// provider maps them to its own names and refuses, at New, any it cannot send.
// The names in comments are the YAML keys (agentos/config).
type Params struct {
	Temperature      *float64 `json:"temperature,omitempty"`       // temperature
	TopP             *float64 `json:"top_p,omitempty"`             // top_p
	MaxTokens        int      `json:"max_tokens,omitempty"`        // max_tokens: output tokens
	Stop             []string `json:"stop,omitempty"`              // stop
	Seed             *int64   `json:"seed,omitempty"`              // seed
	PresencePenalty  *float64 `json:"presence_penalty,omitempty"`  // presence_penalty
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"` // frequency_penalty
	// ReasoningEffort is "minimal", "low", "medium" or "high" (reasoning_effort).
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// ThinkingBudget caps reasoning tokens (thinking_budget): Anthropic and
	// Bedrock Claude extended thinking, Gemini's thinkingBudget (-1:
	// dynamic). Nil is the provider's default; 0 turns thinking off (Gemini
	// 2.5 Flash thinks unless told so; Claude does not think unless given a
	// budget).
	ThinkingBudget *int `json:"thinking_budget,omitempty"`
	// IncludeThoughts asks for reasoning summaries (include_thoughts): Gemini
	// thought summaries, the Responses API's reasoning summary.
	IncludeThoughts bool `json:"include_thoughts,omitempty"`
	// ResponseFormat asks for JSON output (response_format); with an empty
	// Schema any JSON object (JSON mode).
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	// ToolChoice is "auto", "none", "required" or a tool name (tool_choice).
	ToolChoice        string `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool  `json:"parallel_tool_calls,omitempty"` // parallel_tool_calls
	// Timeout bounds one model call, its whole stream included (timeout).
	Timeout time.Duration `json:"timeout,omitempty"`
	// ExtraHeaders are added to every request (extra_headers).
	ExtraHeaders map[string]string `json:"extra_headers,omitempty"`
	// ExtraBody is merged into the top level of every request body, after the
	// provider's own fields, so it can set what Params does not name
	// (extra_body).
	ExtraBody map[string]any `json:"extra_body,omitempty"`
}

// Param names, as in YAML and in ErrUnsupportedParam messages.
const (
	ParamTemperature       = "temperature"
	ParamTopP              = "top_p"
	ParamMaxTokens         = "max_tokens"
	ParamStop              = "stop"
	ParamSeed              = "seed"
	ParamPresencePenalty   = "presence_penalty"
	ParamFrequencyPenalty  = "frequency_penalty"
	ParamReasoningEffort   = "reasoning_effort"
	ParamThinkingBudget    = "thinking_budget"
	ParamIncludeThoughts   = "include_thoughts"
	ParamResponseFormat    = "response_format"
	ParamToolChoice        = "tool_choice"
	ParamParallelToolCalls = "parallel_tool_calls"
	ParamTimeout           = "timeout"
	ParamExtraHeaders      = "extra_headers"
	ParamExtraBody         = "extra_body"
)

// Set lists the names of the parameters p sets, in declaration order.
func (p *Params) Set() []string {
	var out []string
	add := func(on bool, name string) {
		if on {
			out = append(out, name)
		}
	}
	add(p.Temperature != nil, ParamTemperature)
	add(p.TopP != nil, ParamTopP)
	add(p.MaxTokens != 0, ParamMaxTokens)
	add(len(p.Stop) > 0, ParamStop)
	add(p.Seed != nil, ParamSeed)
	add(p.PresencePenalty != nil, ParamPresencePenalty)
	add(p.FrequencyPenalty != nil, ParamFrequencyPenalty)
	add(p.ReasoningEffort != "", ParamReasoningEffort)
	add(p.ThinkingBudget != nil, ParamThinkingBudget)
	add(p.IncludeThoughts, ParamIncludeThoughts)
	add(p.ResponseFormat != nil, ParamResponseFormat)
	add(p.ToolChoice != "", ParamToolChoice)
	add(p.ParallelToolCalls != nil, ParamParallelToolCalls)
	add(p.Timeout != 0, ParamTimeout)
	add(len(p.ExtraHeaders) > 0, ParamExtraHeaders)
	add(len(p.ExtraBody) > 0, ParamExtraBody)
	return out
}

// Check returns an ErrUnsupportedParam error naming every parameter p sets
// that is not in supported, and validates the values of those it does set.
func (p *Params) Check(provider string, supported ...string) error {
	var bad []string
	for _, name := range p.Set() {
		if !slices.Contains(supported, name) {
			bad = append(bad, name)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: %w: %s (supported: %s); remove it from the model's parameters",
			provider, ErrUnsupportedParam, strings.Join(bad, ", "), strings.Join(supported, ", "))
	}
	switch p.ReasoningEffort {
	case "", "minimal", "low", "medium", "high":
	default:
		return fmt.Errorf("%s: reasoning_effort %q: use minimal, low, medium or high", provider, p.ReasoningEffort)
	}
	if p.MaxTokens < 0 || p.Timeout < 0 {
		return fmt.Errorf("%s: max_tokens and timeout must not be negative", provider)
	}
	if b := p.ThinkingBudget; b != nil && *b < -1 {
		return fmt.Errorf("%s: thinking_budget %d: use a token count, 0 for no thinking (or -1 for dynamic where supported)", provider, *b)
	}
	return nil
}

// For returns the parameters of one call: req's own fields (set by the agent
// per turn) override the model's.
func (p Params) For(req *Request) Params {
	if req == nil {
		return p
	}
	if req.Temperature != nil {
		p.Temperature = req.Temperature
	}
	if req.MaxTokens != 0 {
		p.MaxTokens = req.MaxTokens
	}
	if req.ThinkingBudget != 0 {
		b := req.ThinkingBudget
		p.ThinkingBudget = &b
	}
	if req.ToolChoice != "" {
		p.ToolChoice = req.ToolChoice
	}
	if req.ResponseFormat != nil {
		p.ResponseFormat = req.ResponseFormat
	}
	if req.ParallelToolCalls != nil {
		p.ParallelToolCalls = req.ParallelToolCalls
	}
	return p
}

// WithTimeout bounds ctx by p.Timeout when set.
func (p *Params) WithTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.Timeout > 0 {
		return context.WithTimeout(ctx, p.Timeout)
	}
	return ctx, func() {}
}

// MergeBody returns body (a JSON object) with p.ExtraBody's keys set at its
// top level; extra keys win over the provider's own.
func (p *Params) MergeBody(body []byte) ([]byte, error) {
	if len(p.ExtraBody) == 0 {
		return body, nil
	}
	var own map[string]json.RawMessage
	if err := json.Unmarshal(body, &own); err != nil {
		return nil, fmt.Errorf("extra_body: request body is not a JSON object: %w", err)
	}
	obj := make(map[string]any, len(own)+len(p.ExtraBody))
	for k, v := range own {
		obj[k] = v
	}
	for k, v := range p.ExtraBody {
		obj[k] = v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, fmt.Errorf("extra_body: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// ThinkingTokens is the thinking budget to send: ThinkingBudget's value, 0
// when it is nil or 0 (no thinking asked for).
func (p *Params) ThinkingTokens() int {
	if p.ThinkingBudget == nil {
		return 0
	}
	return *p.ThinkingBudget
}
