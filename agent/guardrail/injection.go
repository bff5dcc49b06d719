package guardrail

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

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
// case-insensitive substring match (as strings.EqualFold compares runes), with runs of white space treated as one
// space so "ignore   previous\ninstructions" is caught too, also in a string
// of structured input. Text and patterns are compared without their
// invisible characters (zero-width spaces and joiners, soft hyphens, bidi
// controls: Unicode's default ignorables) and in NFKC form, so that a phrase
// written full width (ＩＧＮＯＲＥ) or split by a zero-width space, which a
// model reads as the phrase, is caught too; a pattern made only of such
// characters (a policy against zero-width text) is looked for as written.
// Look-alike letters of other scripts (a Cyrillic о for an o) are not
// caught.
type PromptInjection struct {
	patterns  []string // as Match returns them: lower case, single spaces
	folded    []string // the same, case-folded, as matched
	asWritten []bool   // folded[i] is matched in the text with its invisible characters
}

var _ agent.PreHook = (*PromptInjection)(nil)

// NewPromptInjection checks for patterns, or DefaultInjectionPatterns when
// none are given.
func NewPromptInjection(patterns []string) *PromptInjection {
	if len(patterns) == 0 {
		patterns = DefaultInjectionPatterns
	}
	g := &PromptInjection{patterns: make([]string, len(patterns)), folded: make([]string, len(patterns)), asWritten: make([]bool, len(patterns))}
	for i, p := range patterns {
		g.patterns[i] = normalizeSpace(p)
		g.folded[i] = foldSpace(p)
		if g.folded[i] == "" && g.patterns[i] != "" { // only invisible characters
			g.folded[i], g.asWritten[i] = foldSpaceAsWritten(p), true
		}
	}
	return g
}

// Name is the hook's name in events.
func (g *PromptInjection) Name() string { return "PromptInjectionGuardrail" }

// Match returns the first pattern found in s, or "".
func (g *PromptInjection) Match(s string) string {
	visible, written := foldSpace(s), ""
	for i, p := range g.folded {
		in := visible
		if g.asWritten[i] {
			if written == "" {
				written = foldSpaceAsWritten(s)
			}
			in = written
		}
		if p != "" && strings.Contains(in, p) {
			return g.patterns[i]
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

// foldSpace is s without its invisible characters, in NFKC form (see
// visible), case-folded (foldCase), with runs of white space made one space.
func foldSpace(s string) string { return foldSpaceAsWritten(visible(s)) }

// foldSpaceAsWritten is s case-folded with runs of white space made one
// space.
func foldSpaceAsWritten(s string) string { return strings.Join(strings.Fields(foldCase(s)), " ") }

// visible returns s without its default-ignorable code points (format
// characters such as U+200B, U+200D, U+2060, U+FEFF, U+00AD and the bidi
// controls; variation selectors; fillers), in NFKC form (full-width and
// other compatibility letters made plain: ＡＢ is AB, ﬁ is fi). ASCII is
// returned as it is.
func visible(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return norm.NFKC.String(strings.Map(func(r rune) rune {
				if ignorable(r) {
					return -1
				}
				return r
			}, s))
		}
	}
	return s
}

// ignorable reports a default-ignorable code point: a format character
// (Cf), a variation selector or another one Unicode lists (fillers); text
// shows none of them.
func ignorable(r rune) bool {
	return r >= 0xAD && unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// foldCase maps each rune, lower-cased, to the smallest rune it equals
// under Unicode simple case folding, so that texts strings.EqualFold finds
// equal are equal after it: lower-casing alone is not that (ſ and s, ς and
// σ have one capital but stay apart), and it keeps what lower-casing joins
// (İ and i).
func foldCase(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Map(foldRune, s)
		}
	}
	return strings.ToUpper(s) // ASCII: the capital is the smallest
}

func foldRune(r rune) rune {
	r = unicode.ToLower(r)
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}
