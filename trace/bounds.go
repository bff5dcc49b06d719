package trace

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentryhq/agentry/db"
)

// Stored traces go to every database in one shape, so the store bounds
// what it writes to the narrowest column that holds it (MySQL/MariaDB's):
// a value the column refuses would fail its whole batch's transaction and
// lose the other traces in it. The same bounds apply on every driver, so a
// trace reads the same wherever it is stored. OTLP export is unaffected.
const (
	// MaxNameChars bounds a stored span's and trace's name (VARCHAR(255)
	// on MySQL, counted in characters); a longer name is cut and ends "…".
	MaxNameChars = 255
	// MaxIDChars bounds the run, session, user, agent, team and workflow
	// ids a trace row takes from its root span. A longer id is left out
	// rather than cut: a cut id could name another run or user (a trace
	// without a user is visible to administrators only).
	MaxIDChars = 255
	// MaxStatusMessageBytes bounds a stored span's status message (TEXT
	// on MySQL holds 65,535 bytes); a longer one is cut like content,
	// ending with TruncatedMarker.
	MaxStatusMessageBytes = 8 << 10
	// MaxAttributeBytes bounds each string attribute value of a stored
	// span, whatever Content.MaxBytes allows; a longer one is cut like
	// content, ending with TruncatedMarker.
	MaxAttributeBytes = 256 << 10
	// MaxSpanAttributesBytes bounds the string attribute values of one
	// stored span together: a span is one row, and MySQL/MariaDB refuse a
	// value larger than max_allowed_packet (16 MiB by default on MariaDB)
	// and with it the span's whole trace. Values past the budget, in the
	// span's attribute order, are cut like content (to the marker alone
	// once it is spent); a string list past it ends with a marker string.
	MaxSpanAttributesBytes = 4 << 20
)

// cleanText makes s storable as text everywhere: valid UTF-8 (Postgres and
// MySQL refuse invalid sequences) and no NUL (Postgres refuses it in text
// and as \u0000 in JSONB).
func cleanText(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// boundName cleans a name and cuts it to MaxNameChars characters.
func boundName(s string) string {
	s = cleanText(s)
	if utf8.RuneCountInString(s) <= MaxNameChars {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxNameChars-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// boundID is id if it is storable as it is, else "".
func boundID(id string) string {
	if utf8.RuneCountInString(id) > MaxIDChars || cleanText(id) != id {
		return ""
	}
	return id
}

// boundText cleans s and cuts it to limit bytes.
func boundText(s string, limit int) string {
	s = cleanText(s)
	if len(s) <= limit {
		return s
	}
	return capped(s, len(s), limit)
}

// boundTrace applies the bounds to a trace row's name and ids.
func boundTrace(t *db.Trace) {
	t.Name = boundName(t.Name)
	for _, id := range []*string{&t.RunID, &t.SessionID, &t.UserID, &t.AgentID, &t.TeamID, &t.WorkflowID} {
		*id = boundID(*id)
	}
}

// attrBudget is what a span's string attribute values may still take, in
// bytes (MaxSpanAttributesBytes at the start of a span).
type attrBudget int

// bound bounds a string attribute value (and the strings of a slice) to
// MaxAttributeBytes and to what is left of the span's budget.
func (b *attrBudget) bound(v any) any {
	switch x := v.(type) {
	case string:
		return b.text(x)
	case []string:
		out := make([]string, 0, len(x))
		for i, s := range x {
			if *b <= 0 {
				return append(out, "…[truncated: "+strconv.Itoa(len(x)-i)+" more strings]")
			}
			out = append(out, b.text(s))
		}
		return out
	case float64:
		if !finite(x) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
	case []float64:
		if !slices.ContainsFunc(x, func(f float64) bool { return !finite(f) }) {
			return x
		}
		out := make([]any, len(x))
		for i, f := range x {
			out[i] = f
			if !finite(f) {
				out[i] = strconv.FormatFloat(f, 'g', -1, 64)
			}
		}
		return out
	}
	return v
}

// finite: JSON has no NaN or infinities; a span attribute holding one is
// stored as its text ("NaN", "+Inf", "-Inf") rather than fail the
// encoding of all the span's attributes.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func (b *attrBudget) text(s string) string {
	t := boundText(s, min(MaxAttributeBytes, max(int(*b), 0)))
	*b -= attrBudget(len(t))
	return t
}
