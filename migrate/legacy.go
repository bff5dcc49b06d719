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
	"github.com/agentryhq/agentry/run"
)

// Bad-row kinds recorded by the copy.
const (
	BadInvalidJSON = "invalid_json"   // the runs column is not valid JSON
	BadNotArray    = "not_array"      // the runs column holds something other than an array
	BadElement     = "bad_element"    // an element is not a JSON object
	BadNoRunID     = "missing_run_id" // an element has no string run_id
	BadDuplicate   = "duplicate_run_id"
)

// unwrapJSON strips up to two layers of string encoding (Agno's SQLite writer
// stores JSON columns as a JSON string holding the JSON text).
func unwrapJSON(b []byte) ([]byte, error) {
	b = bytes.TrimSpace(b)
	for range 2 {
		if len(b) == 0 || b[0] != '"' {
			break
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, err
		}
		b = bytes.TrimSpace([]byte(s))
	}
	if !json.Valid(b) {
		return nil, errors.New("not valid JSON")
	}
	return b, nil
}

// decodeLegacyRuns turns a runs column value into its elements. A nil result
// with a nil error means "no runs" (SQL NULL, JSON null).
func decodeLegacyRuns(raw []byte) ([]json.RawMessage, string, error) {
	if raw == nil {
		return nil, "", nil
	}
	b, err := unwrapJSON(raw)
	if err != nil {
		return nil, BadInvalidJSON, err
	}
	if len(b) == 0 || string(b) == "null" {
		return nil, "", nil
	}
	if b[0] != '[' {
		return nil, BadNotArray, fmt.Errorf("runs holds a JSON %s, not an array", jsonKind(b[0]))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(b, &elems); err != nil {
		return nil, BadInvalidJSON, err
	}
	return elems, "", nil
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
	RunID       json.RawMessage `json:"run_id"`
	AgentID     json.RawMessage `json:"agent_id"`
	TeamID      json.RawMessage `json:"team_id"`
	WorkflowID  json.RawMessage `json:"workflow_id"`
	ParentRunID json.RawMessage `json:"parent_run_id"`
	Status      json.RawMessage `json:"status"`
	CreatedAt   json.RawMessage `json:"created_at"`
	UpdatedAt   json.RawMessage `json:"updated_at"`
}

// str returns a JSON string's value, or "" for anything else.
func str(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// seconds reads an epoch-seconds number (int, float or numeric string).
func seconds(raw json.RawMessage) (int64, bool) {
	s := strings.Trim(string(raw), `"`)
	if s == "" || s == "null" {
		return 0, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return int64(f), true
	}
	return 0, false
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
	b, err := unwrapJSON(elem)
	if err != nil {
		return db.Run{}, BadElement, err
	}
	if len(b) == 0 || b[0] != '{' {
		return db.Run{}, BadElement, fmt.Errorf("element is a JSON %s, not an object", jsonKind(b[0]))
	}
	var h runHead
	if err := json.Unmarshal(b, &h); err != nil {
		return db.Run{}, BadElement, err
	}
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
