package guardrail

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/internal/lossless"
	"github.com/agentryhq/agentry/run"
)

// PII kinds, as Agno names them in additional_data.detected_pii.
const (
	PIISSN        = "SSN"
	PIICreditCard = "Credit Card"
	PIIEmail      = "Email"
	PIIPhone      = "Phone"
)

// PIIKinds are the built-in kinds, in the order they are checked.
var PIIKinds = []string{PIISSN, PIICreditCard, PIIEmail, PIIPhone}

var builtinPII = map[string]*regexp.Regexp{
	PIISSN:        regexp.MustCompile(`\b\d{3}-\d{2}-\d{4}\b`),
	PIICreditCard: regexp.MustCompile(`\b\d{4}[\s-]?\d{4}[\s-]?\d{4}[\s-]?\d{4}\b`),
	PIIEmail:      regexp.MustCompile(`\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b`),
	PIIPhone:      regexp.MustCompile(`\b\d{3}[\s.-]?\d{3}[\s.-]?\d{4}\b`),
}

// builtinNeeds are cheap preconditions of the built-in patterns: a text
// without a digit (or an '@') cannot match, and skipping the regular
// expression for it keeps clean input cheap (see docs/benchmarks.md).
var builtinNeeds = map[string]func(string) bool{
	PIISSN:        hasDigit,
	PIICreditCard: hasDigit,
	PIIEmail:      func(s string) bool { return strings.IndexByte(s, '@') >= 0 },
	PIIPhone:      hasDigit,
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

// ErrBadPattern is wrapped by NewPII's error for a custom pattern that does
// not compile.
var ErrBadPattern = errors.New("guardrail: invalid pattern")

// PIIConfig configures a PII guardrail. The zero value checks every built-in
// kind and rejects.
type PIIConfig struct {
	// Mask replaces each match with asterisks, one per character, instead
	// of rejecting (Agno's mask_pii).
	Mask bool
	// Skip lists built-in kinds not to check (PIISSN, …).
	Skip []string
	// Custom adds named patterns (RE2 syntax), checked after the built-in
	// ones. A pattern matching the empty string is refused.
	Custom map[string]string
}

// PII detects personally identifiable information (Agno's
// PIIDetectionGuardrail): as a pre-hook in the input, as a post-hook in the
// answer. The built-in kinds read decimal digits and white space of any
// script, as Agno's do; custom patterns are RE2 as written. Structured content is checked (and masked) string by string,
// numbers included as their digits (a masked number becomes a string of
// asterisks); content in which two keys of one object would mask alike
// becomes its masked JSON text, so that no member is lost.
type PII struct {
	mask     bool
	names    []string
	patterns []*regexp.Regexp
	needs    []func(string) bool // nil: always try the pattern
}

var (
	_ agent.PreHook  = (*PII)(nil)
	_ agent.PostHook = (*PII)(nil)
)

// NewPII compiles cfg.
func NewPII(cfg PIIConfig) (*PII, error) {
	g := &PII{mask: cfg.Mask}
	for _, s := range cfg.Skip {
		if !slices.Contains(PIIKinds, s) {
			return nil, fmt.Errorf("guardrail: unknown PII kind %q to skip (kinds: %s)", s, strings.Join(PIIKinds, ", "))
		}
	}
	for _, k := range PIIKinds {
		if !slices.Contains(cfg.Skip, k) {
			g.names = append(g.names, k)
			g.patterns = append(g.patterns, builtinPII[k])
			g.needs = append(g.needs, builtinNeeds[k])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Custom)) {
		re, err := regexp.Compile(cfg.Custom[name])
		if err != nil {
			return nil, fmt.Errorf("%w: custom PII pattern %q: %v", ErrBadPattern, name, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("%w: custom PII pattern %q matches the empty string, so every text would hold it; make it match at least one character", ErrBadPattern, name)
		}
		g.names = append(g.names, name)
		g.patterns = append(g.patterns, re)
		g.needs = append(g.needs, nil)
	}
	if len(g.patterns) == 0 {
		return nil, errors.New("guardrail: the PII guardrail checks nothing: every kind is skipped and no custom pattern is given")
	}
	return g, nil
}

// Name is the hook's name in events.
func (g *PII) Name() string { return "PIIDetectionGuardrail" }

// Detect returns the kinds found in s, in check order. The built-in kinds
// are looked for in s as written and, when s holds invisible characters
// (zero-width spaces, joiners, soft hyphens: see ignorable), without them:
// "123\u200b-45-6789" reads as an SSN.
func (g *PII) Detect(s string) []string {
	var found []string
	t, at := asciiDigitsAndSpaces(s, false)
	var u string // s's view without its invisible characters; "" when it has none
	if at != nil && strings.ContainsFunc(s, ignorable) {
		u, _ = asciiDigitsAndSpaces(s, true)
	}
	for i, re := range g.patterns {
		var hit bool
		if g.builtin(i) {
			hit = g.needs[i](t) && re.MatchString(t) || u != "" && g.needs[i](u) && re.MatchString(u)
		} else {
			hit = re.MatchString(s)
		}
		if hit {
			found = append(found, g.names[i])
		}
	}
	return found
}

// builtin reports a built-in pattern: it has a precondition and reads the
// text with its digits and spaces made ASCII (asciiDigitsAndSpaces).
func (g *PII) builtin(i int) bool { return g.needs[i] != nil }

// Redact masks every match in s with one asterisk per character.
func (g *PII) Redact(s string) string {
	for i, re := range g.patterns {
		if !g.builtin(i) {
			s = re.ReplaceAllStringFunc(s, func(m string) string { return strings.Repeat("*", utf8.RuneCountInString(m)) })
			continue
		}
		s = g.maskMatches(i, s, false)
		if strings.ContainsFunc(s, ignorable) {
			s = g.maskMatches(i, s, true)
		}
	}
	return s
}

// maskMatches masks the matches of built-in pattern i in s, read as
// asciiDigitsAndSpaces(s, drop) reads it.
func (g *PII) maskMatches(i int, s string, drop bool) string {
	re := g.patterns[i]
	t, at := asciiDigitsAndSpaces(s, drop)
	if !g.needs[i](t) {
		return s
	}
	if at == nil { // t is s
		return re.ReplaceAllStringFunc(s, func(m string) string { return strings.Repeat("*", len(m)) })
	}
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringIndex(t, -1) {
		from, to := at[m[0]], at[m[1]]
		b.WriteString(s[last:from])
		b.WriteString(strings.Repeat("*", utf8.RuneCountInString(s[from:to])))
		last = to
	}
	b.WriteString(s[last:])
	return b.String()
}

// asciiDigitsAndSpaces returns s with every non-ASCII decimal digit made
// '0' and every non-ASCII white space made ' ', so that the built-in
// patterns (RE2's \d, \s and \b are ASCII) find what Agno's find (Python's
// are Unicode): a number in full-width or Arabic-Indic digits, grouped by
// no-break spaces; full-width ASCII (U+FF01 to U+FF5E: ＠, －, ．, letters)
// is made ASCII too, as an IME types it beside full-width digits. With
// drop, the invisible characters (ignorable) are left out. at maps each
// byte offset of the result, and its end, to the offset in s (a left-out
// character belongs to what follows it); at is nil (and the result s) when
// s is ASCII.
func asciiDigitsAndSpaces(s string, drop bool) (t string, at []int) {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < utf8.RuneSelf
	}
	if ascii {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	at = make([]int, 0, len(s)+1)
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case drop && ignorable(r):
		case r >= utf8.RuneSelf && unicode.IsDigit(r):
			b.WriteByte('0')
			at = append(at, i)
		case r >= utf8.RuneSelf && unicode.IsSpace(r):
			b.WriteByte(' ')
			at = append(at, i)
		case r >= 0xFF01 && r <= 0xFF5E: // full-width ASCII: ＠ is @, － is -
			b.WriteByte(byte(r - 0xFEE0))
			at = append(at, i)
		default:
			b.WriteString(s[i : i+w])
			for k := range w {
				at = append(at, i+k)
			}
		}
		i += w
	}
	return b.String(), append(at, len(s))
}

// PreRun rejects input holding PII (trigger pii_detected), or masks it.
func (g *PII) PreRun(_ context.Context, in *run.Input) error {
	found := g.detectValue(in.InputContent)
	if len(found) == 0 {
		return nil
	}
	if g.mask {
		in.InputContent = g.redactValue(in.InputContent)
		return nil
	}
	return &agent.InputCheckError{Message: "Potential PII detected in input", Trigger: agent.TriggerPIIDetected,
		AdditionalData: map[string]any{"detected_pii": found}}
}

// PostRun rejects an answer holding PII (trigger pii_detected), or masks it.
func (g *PII) PostRun(_ context.Context, out *run.Output) error {
	found := g.detectValue(out.Content)
	if len(found) == 0 {
		return nil
	}
	if g.mask {
		out.Content = g.redactValue(out.Content)
		return nil
	}
	return &agent.OutputCheckError{Message: "Potential PII detected in output", Trigger: agent.TriggerPIIDetected,
		AdditionalData: map[string]any{"detected_pii": found}}
}

// detectValue finds kinds in every string of v (a string or decoded JSON).
func (g *PII) detectValue(v any) []string {
	var found []string
	walkStrings(v, func(s string) string {
		for _, k := range g.Detect(s) {
			if !slices.Contains(found, k) {
				found = append(found, k)
			}
		}
		return s
	})
	// Keep check order whatever the strings' order.
	var ordered []string
	for _, n := range g.names {
		if slices.Contains(found, n) {
			ordered = append(ordered, n)
		}
	}
	return ordered
}

// redactValue masks every string of v. Should two keys of one object mask
// alike (two emails of one length), one member would be lost: v is then
// masked as its JSON text instead, string by string (as Agno masks
// structured input, as text).
func (g *PII) redactValue(v any) any {
	merged := false
	out := walk(v, g.Redact, &merged)
	if !merged {
		return out
	}
	var b bytes.Buffer
	writeMasked(&b, walk(v, func(s string) string { return s }, nil), g.Redact, nil)
	return b.String()
}

// writeMasked writes v, a value as walk returns it, as JSON text with f
// applied to its strings (keys included) and numbers, object members in
// key order. A map or slice inside itself (in, its enclosing ones) is
// written as null where it repeats: JSON has no way to write it.
func writeMasked(b *bytes.Buffer, v any, f func(string) string, in map[container]bool) {
	if c, ok := identity(v); ok {
		if in[c] {
			b.WriteString("null")
			return
		}
		if in == nil {
			in = make(map[container]bool)
		}
		in[c] = true
		defer delete(in, c)
	}
	switch v := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeMasked(b, f(k), func(s string) string { return s }, in)
			b.WriteByte(':')
			writeMasked(b, v[k], f, in)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeMasked(b, x, f, in)
		}
		b.WriteByte(']')
	default:
		text, err := json.Marshal(walk(v, f, nil))
		if err != nil { // NaN or an infinity
			text = []byte("null")
		}
		b.Write(text)
	}
}

// container identifies a map (n is -1) or a non-empty slice (its first
// element's address and its length) of a value being walked.
type container struct {
	p uintptr
	n int
}

// identity returns v's container identity when v is a map[string]any or a
// non-empty []any.
func identity(v any) (container, bool) {
	switch x := v.(type) {
	case map[string]any:
		return container{reflect.ValueOf(x).Pointer(), -1}, true
	case []any:
		if len(x) > 0 {
			return container{reflect.ValueOf(x).Pointer(), len(x)}, true
		}
	}
	return container{}, false
}

// walkStrings returns v with f applied to every string in it (map keys
// included). A number is checked as the digits the model reads (its JSON
// text) and, when f changes them, replaced by f's string; booleans and nulls
// are kept. A Go value of another type ([]string, a struct) is taken as its
// JSON form, so that nothing the model would read goes unchecked. Each map
// and slice is walked once, however often it appears: one that holds
// itself (a Go value can; JSON cannot) was walked until the stack
// overflowed, which ends the process, and one shared by many members was
// walked once per path to it. Its copy appears wherever it did, so the
// copy of a map holding itself holds itself.
func walkStrings(v any, f func(string) string) any { return walk(v, f, nil) }

// walk is walkStrings, setting *merged (when not nil) if f maps two keys of
// one object to one.
func walk(v any, f func(string) string, merged *bool) any {
	w := walker{f: f, merged: merged}
	return w.walk(v)
}

// walker is one walk: f, where to note a merge, and the copy made of each
// map and slice met so far.
type walker struct {
	f      func(string) string
	merged *bool
	copies map[container]any
}

// copied returns the copy already made of v, a map or a slice.
func (w *walker) copied(v any) (any, container, bool) {
	c, ok := identity(v)
	if !ok {
		return nil, c, false
	}
	out, ok := w.copies[c]
	return out, c, ok
}

// keep records out as the copy of the container c.
func (w *walker) keep(c container, out any) {
	if w.copies == nil {
		w.copies = make(map[container]any)
	}
	w.copies[c] = out
}

func (w *walker) walk(v any) any {
	f := w.f
	switch v := v.(type) {
	case nil, bool:
		return v
	case string:
		return f(v)
	case map[string]any:
		done, c, ok := w.copied(v)
		if ok {
			return done
		}
		out := make(map[string]any, len(v))
		w.keep(c, out)
		for k, x := range v {
			out[f(k)] = w.walk(x)
		}
		if w.merged != nil && len(out) < len(v) {
			*w.merged = true
		}
		return out
	case []any:
		done, c, ok := w.copied(v)
		if ok {
			return done
		}
		out := make([]any, len(v))
		if len(v) > 0 {
			w.keep(c, out)
		}
		for i, x := range v {
			out[i] = w.walk(x)
		}
		return out
	case json.Number:
		return walkNumber(v, string(v), f)
	case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		b, err := json.Marshal(v)
		if err != nil { // NaN or an infinity: no digits to read
			return v
		}
		return walkNumber(v, string(b), f)
	}
	b, err := json.Marshal(v)
	if err != nil { // the model cannot be sent it either (a cycle among them)
		return v
	}
	var plain any
	if err := lossless.UnmarshalNumbers(b, &plain); err != nil {
		return v
	}
	return w.walk(plain)
}

// walkNumber applies f to a number's text: the number stays when f keeps
// the text, else f's string replaces it.
func walkNumber(v any, text string, f func(string) string) any {
	if r := f(text); r != text {
		return r
	}
	return v
}
