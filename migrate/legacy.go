package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/lossless"
	"github.com/agentryhq/agentry/run"
)

// Bad-row kinds recorded by the copy.
const (
	BadInvalidJSON = "invalid_json"   // the runs column is not valid JSON
	BadNotArray    = "not_array"      // the runs column holds something other than an array
	BadElement     = "bad_element"    // an element is not a JSON object
	BadNoRunID     = "missing_run_id" // an element has no string run_id
	BadDuplicate   = "duplicate_run_id"
	BadNUL         = "nul_character" // a run holds U+0000, which Postgres JSONB cannot store
	// BadSurrogate: a run holds an escaped UTF-16 surrogate without its
	// pair (\ud83d alone, as Python's json.dumps writes a lone surrogate),
	// which Postgres JSONB and MariaDB's json refuse and Postgres' json type
	// (or a legacy column holding the runs as a JSON string) keeps.
	BadSurrogate = "unpaired_surrogate"
)

// hasNULEscape reports whether JSON text holds the escape \u0000 (raw NUL
// bytes cannot appear in valid JSON).
func hasNULEscape(b []byte) bool {
	for i := 0; i < len(b); {
		j := bytes.Index(b[i:], []byte("u0000"))
		if j < 0 {
			return false
		}
		k := i + j
		n := 0
		for p := k - 1; p >= 0 && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 1 {
			return true
		}
		i = k + 1
	}
	return false
}

// hasUnpairedSurrogate reports whether JSON text holds an escaped UTF-16
// surrogate that is not half of a pair (a high one followed by an escaped
// low one). Only escapes count: a backslash escaped by another is text.
func hasUnpairedSurrogate(b []byte) bool {
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 || i+j+1 >= len(b) {
			return false
		}
		i += j
		r, ok := escapedRune(b[i:])
		if !ok {
			i += 2 // \\, \" and the like: the next byte is escaped
			continue
		}
		i += 6
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			if low, ok := escapedRune(b[i:]); !ok || low < 0xDC00 || low > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// escapedRune reads the escape \uXXXX at the start of b.
func escapedRune(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// unwrapJSON strips up to two layers of string encoding (Agno's SQLite writer
// stores JSON columns as a JSON string holding the JSON text) and checks the
// result is JSON.
func unwrapJSON(b []byte) ([]byte, error) {
	b, _, err := unwrapLayers(b)
	if err != nil {
		return nil, err
	}
	if b, ok := finiteJSON(b); ok {
		return b, nil
	}
	return nil, errors.New("not valid JSON")
}

// finiteJSON returns b when it is valid JSON, or b with the words Python's
// json module writes for floats that are not finite (NaN, Infinity), which
// Agno's SQLite writer stores, read as null (lossless.WithoutNonFinite) when
// that makes it valid; false when neither is.
func finiteJSON(b []byte) ([]byte, bool) {
	if validJSON(b) {
		return b, true
	}
	if nb, ok := lossless.WithoutNonFinite(b); ok && validJSON(nb) {
		return nb, true
	}
	return b, false
}

// unwrapLayers strips up to two layers of string encoding without validating
// what is inside; layers says how many it removed.
func unwrapLayers(b []byte) (_ []byte, layers int, err error) {
	b = bytes.TrimSpace(b)
	for range 2 {
		if len(b) == 0 || b[0] != '"' {
			break
		}
		if b, err = unquote(b); err != nil {
			return nil, layers, fmt.Errorf("not valid JSON: %w", err)
		}
		b = bytes.TrimSpace(b)
		layers++
	}
	return b, layers, nil
}

// decodeLegacyRuns turns a runs column value into its elements. A nil result
// with an empty kind means "no runs" (SQL NULL, JSON null). trusted says the
// value came from a JSON-typed column (Postgres, MySQL), which only holds
// valid JSON; SQLite text is validated.
func decodeLegacyRuns(raw []byte, trusted bool) ([]json.RawMessage, string, error) {
	if raw == nil {
		return nil, "", nil
	}
	b, layers, err := unwrapLayers(raw)
	if err != nil {
		return nil, BadInvalidJSON, err
	}
	if len(b) == 0 {
		return nil, BadInvalidJSON, errors.New("empty value")
	}
	if !trusted || layers > 0 {
		var ok bool
		if b, ok = finiteJSON(b); !ok {
			return nil, BadInvalidJSON, errors.New("not valid JSON")
		}
	}
	if string(b) == "null" {
		return nil, "", nil
	}
	if b[0] != '[' {
		return nil, BadNotArray, fmt.Errorf("runs holds a JSON %s, not an array", jsonKind(b[0]))
	}
	return splitArray(b), "", nil
}

func jsonKind(c byte) string {
	switch c {
	case '{':
		return "object"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// runHead holds the fields of a run element that become columns.
type runHead struct {
	RunID, AgentID, TeamID, WorkflowID, ParentRunID, Status, CreatedAt, UpdatedAt []byte
}

func readHead(obj []byte) runHead {
	var h runHead
	eachField(obj, func(key string, val []byte) {
		switch key {
		case "run_id":
			h.RunID = val
		case "agent_id":
			h.AgentID = val
		case "team_id":
			h.TeamID = val
		case "workflow_id":
			h.WorkflowID = val
		case "parent_run_id":
			h.ParentRunID = val
		case "status":
			h.Status = val
		case "created_at":
			h.CreatedAt = val
		case "updated_at":
			h.UpdatedAt = val
		}
	})
	return h
}

// str returns a JSON string's value, or "" for anything else.
func str(raw []byte) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	s, err := unquote(raw)
	if err != nil {
		return ""
	}
	return string(s)
}

// seconds reads an epoch-seconds number (int, float or numeric string).
func seconds(raw []byte) (int64, bool) {
	s := strings.Trim(string(raw), `"`)
	if s == "" || s == "null" {
		return 0, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return floatSeconds(f)
	}
	return 0, false
}

// floatSeconds truncates f toward zero. NaN, ±Inf and values beyond int64
// are no time: converting them is implementation-specific in Go (the
// minimum int64 on amd64, the bound on arm64).
func floatSeconds(f float64) (int64, bool) {
	// -2^63 is an int64; 2^63 is not (float64(math.MaxInt64) rounds up to it).
	if math.IsNaN(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// sessionSeconds scans a sessions row's created_at. A 2.x SQLite column
// holds whatever Python handed it: an integer as Agno writes, a REAL
// (time.time()), numeric text. A value that is no number reads as 0 (the
// runs then take their own created_at, or 0): scanning it into an int64
// failed, and with it every Up, on one session.
type sessionSeconds int64

func (s *sessionSeconds) Scan(v any) error {
	switch v := v.(type) {
	case int64:
		*s = sessionSeconds(v)
	case float64:
		n, _ := floatSeconds(v)
		*s = sessionSeconds(n)
	case []byte:
		n, _ := seconds(v)
		*s = sessionSeconds(n)
	case string:
		n, _ := seconds([]byte(v))
		*s = sessionSeconds(n)
	default:
		*s = 0
	}
	return nil
}

// legacySession is what the copy needs from a sessions row.
type legacySession struct {
	SessionID string
	UserID    string
	CreatedAt int64
}

// elementToRun builds the runs-table row for the element at position idx. kind
// is non-empty when the element cannot be migrated.
func elementToRun(s legacySession, idx int, elem json.RawMessage) (db.Run, string, error) {
	b := []byte(elem)
	if len(b) > 0 && b[0] == '"' {
		var err error
		if b, err = unwrapJSON(b); err != nil {
			return db.Run{}, BadElement, err
		}
	}
	if len(b) == 0 || b[0] != '{' {
		kind := "nothing"
		if len(b) > 0 {
			kind = "a JSON " + jsonKind(b[0])
		}
		return db.Run{}, BadElement, fmt.Errorf("element is %s, not an object", kind)
	}
	h := readHead(b)
	r := db.Run{
		RunID:       str(h.RunID),
		SessionID:   s.SessionID,
		AgentID:     str(h.AgentID),
		TeamID:      str(h.TeamID),
		WorkflowID:  str(h.WorkflowID),
		UserID:      s.UserID,
		ParentRunID: str(h.ParentRunID),
		Status:      run.Status(strings.ToUpper(str(h.Status))),
		RunData:     b,
	}
	if r.RunID == "" {
		return db.Run{}, BadNoRunID, errors.New("element has no string run_id")
	}
	switch {
	case r.AgentID != "":
		r.RunType = run.TypeAgent
	case r.TeamID != "":
		r.RunType = run.TypeTeam
	default:
		r.RunType = run.TypeWorkflow
	}
	ix := int64(idx)
	r.RunIndex = &ix
	var ok bool
	if r.CreatedAt, ok = seconds(h.CreatedAt); !ok {
		r.CreatedAt = s.CreatedAt
	}
	if r.UpdatedAt, ok = seconds(h.UpdatedAt); !ok {
		r.UpdatedAt = r.CreatedAt
	}
	return r, "", nil
}
