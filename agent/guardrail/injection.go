package guardrail

import (
	"context"
	"strings"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
)

// DefaultInjectionPatterns are the phrases PromptInjection looks for when
// none are given (Agno's list).
var DefaultInjectionPatterns = []string{
	"ignore previous instructions", "ignore your instructions", "you are now a",
	"forget everything above", "developer mode", "override safety", "disregard guidelines",
	"system prompt", "jailbreak", "act as if", "pretend you are", "roleplay as",
	"simulate being", "bypass restrictions", "ignore safeguards", "admin override",
	"root access", "forget everything",
}

// PromptInjection rejects input containing a known jailbreak phrase (Agno's
// PromptInjectionGuardrail; trigger prompt_injection). It is a heuristic: a
// case-insensitive substring match, with runs of white space treated as one
// space so "ignore   previous\ninstructions" is caught too, also in a string
// of structured input.
type PromptInjection struct {
	patterns []string
}

var _ agent.PreHook = (*PromptInjection)(nil)

// NewPromptInjection checks for patterns, or DefaultInjectionPatterns when
// none are given.
func NewPromptInjection(patterns []string) *PromptInjection {
	if len(patterns) == 0 {
		patterns = DefaultInjectionPatterns
	}
	g := &PromptInjection{patterns: make([]string, len(patterns))}
	for i, p := range patterns {
		g.patterns[i] = normalizeSpace(p)
	}
	return g
}

// Name is the hook's name in events.
func (g *PromptInjection) Name() string { return "PromptInjectionGuardrail" }

// Match returns the first pattern found in s, or "".
func (g *PromptInjection) Match(s string) string {
	s = normalizeSpace(s)
	for _, p := range g.patterns {
		if p != "" && strings.Contains(s, p) {
			return p
		}
	}
	return ""
}

// PreRun rejects the input when a pattern matches. Structured input is
// matched string by string (map keys included), where its line breaks and
// tabs are white space rather than the escapes of its JSON text, and as
// that text.
func (g *PromptInjection) PreRun(_ context.Context, in *run.Input) error {
	if !g.matchValue(in.InputContent) {
		return nil
	}
	return &agent.InputCheckError{Message: "Potential jailbreaking or prompt injection detected.", Trigger: agent.TriggerPromptInjection}
}

// matchValue reports whether a pattern matches in v, a string or structured
// content.
func (g *PromptInjection) matchValue(v any) bool {
	if s, ok := v.(string); ok {
		return g.Match(s) != ""
	}
	found := g.Match(run.ContentText(v)) != ""
	if !found {
		walkStrings(v, func(s string) string {
			found = found || g.Match(s) != ""
			return s
		})
	}
	return found
}

func normalizeSpace(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
