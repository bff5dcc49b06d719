package db

import (
	"bytes"
	"encoding/json"
	"unsafe"

	"github.com/agentryhq/agentry/internal/lossless"
	"github.com/agentryhq/agentry/run"
)

// Session is one row of the sessions table (agno_sessions). It never contains runs.
// JSON columns are raw JSON; empty means SQL NULL.
type Session struct {
	SessionID   string
	SessionType run.Type
	AgentID     string
	TeamID      string
	WorkflowID  string
	UserID      string
	// SessionData holds session_name, session_state and other session fields.
	SessionData  json.RawMessage
	AgentData    json.RawMessage
	TeamData     json.RawMessage
	WorkflowData json.RawMessage
	Metadata     json.RawMessage
	Summary      json.RawMessage
	CreatedAt    int64
	UpdatedAt    int64
}

// Clone copies a session with its JSON columns in one block (a session is
// read on every turn): each column is a full slice of it, so an append to
// one reallocates instead of writing into the next. A nil column stays nil,
// an empty one empty.
func (s *Session) Clone() *Session {
	cp := *s
	cols := [...]*json.RawMessage{&cp.SessionData, &cp.AgentData, &cp.TeamData, &cp.WorkflowData, &cp.Metadata, &cp.Summary}
	n := 0
	for _, c := range cols {
		n += len(*c)
	}
	if n == 0 {
		for _, c := range cols {
			*c = bytes.Clone(*c) // nil stays nil, empty stays empty
		}
		return &cp
	}
	block := make([]byte, 0, n)
	for _, c := range cols {
		if *c == nil {
			continue
		}
		at := len(block)
		block = append(block, *c...)
		*c = block[at:len(block):len(block)]
	}
	return &cp
}

// SessionData is the decoded shape of Session.SessionData. Unknown keys are kept.
type SessionData struct {
	SessionName  string         `json:"session_name,omitempty"`
	SessionState map[string]any `json:"session_state,omitempty"`
}

// SessionStateOf reads the session_state member of a session_data column;
// ok is false when data is not a JSON object or the state not an object
// (nil state, ok true: none stored). A number float64 cannot give back (a
// 64-bit id Python stored) stays json.Number, so it is saved again
// unchanged (lossless.UnmarshalExact); the others are float64.
func SessionStateOf(data json.RawMessage) (state map[string]any, ok bool) {
	if len(data) > 0 && !json.Valid(data) {
		return nil, false
	}
	return SessionStateOfStored(data)
}

// SessionStateOfStored is SessionStateOf for a session_data column a store
// returned, which is valid JSON (every driver checks the JSON columns it
// reads or keeps): it is not checked again, as a run reads its session's
// state at every turn. Data that is not valid JSON gives an unspecified
// answer, never a panic.
func SessionStateOfStored(data json.RawMessage) (state map[string]any, ok bool) {
	t := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(t) == 0 || t[0] == 'n': // null
		return nil, true
	case t[0] != '{':
		return nil, false
	}
	// Read without decoding the other members (the session's metrics).
	var raw []byte
	r := lossless.ReadMembers(t)
	for key, v, more := r.Next(); more; key, v, more = r.Next() {
		if lossless.KeyIs(key, "session_state") {
			raw = v // the last, as encoding/json reads a repeated member
		}
	}
	if raw == nil {
		return nil, true
	}
	state, err := lossless.UnmarshalExactObject(raw)
	return state, err == nil
}

// Run is one row of the runs table (agno_runs). RunData is the whole run in
// Agno's field names (a run.Output), kept as raw JSON so unknown fields survive.
// Empty strings are stored as NULL.
type Run struct {
	RunID       string
	SessionID   string
	RunType     run.Type
	AgentID     string
	TeamID      string
	WorkflowID  string
	UserID      string
	ParentRunID string
	Status      run.Status
	// RunIndex is the 0-based position in the session; nil on write means
	// "assign max+1 atomically". An existing row keeps its index.
	RunIndex  *int64
	RunData   json.RawMessage
	CreatedAt int64
	UpdatedAt int64

	// checked is the run_data RunFromOutput encoded, so a store can skip
	// re-validating JSON it knows is valid (see CheckedJSON).
	checked json.RawMessage
}

// CheckedJSON reports whether RunData is still the checked, compact JSON that
// RunFromOutput encoded (same bytes in the same place), so a store need not
// scan it again. A row whose RunData was replaced reports false; bytes
// changed in place are the caller's bug: an in-process store (db/memory)
// keeps checked bytes as they are, without a copy.
func (r *Run) CheckedJSON() bool {
	return len(r.checked) > 0 && len(r.checked) == len(r.RunData) &&
		unsafe.SliceData(r.checked) == unsafe.SliceData(r.RunData)
}

// Output decodes RunData.
func (r *Run) Output() (*run.Output, error) {
	var o run.Output
	if err := json.Unmarshal(r.RunData, &o); err != nil {
		return nil, &CorruptRowError{Table: "runs", ID: r.RunID, Err: err}
	}
	return &o, nil
}

// RunFromOutput builds a row from a run. The row's columns are taken from the
// run's fields; RunIndex is left for the store to assign.
func RunFromOutput(o *run.Output) (*Run, error) {
	// The method itself, not json.Marshal: it returns compact, checked JSON,
	// which json.Marshal would scan once more.
	data, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return &Run{
		RunID:       o.RunID,
		SessionID:   o.SessionID,
		RunType:     o.Type(),
		AgentID:     o.AgentID,
		TeamID:      o.TeamID,
		WorkflowID:  o.WorkflowID,
		UserID:      o.UserID,
		ParentRunID: o.ParentRunID,
		Status:      o.Status,
		RunData:     data,
		CreatedAt:   o.CreatedAt,
		UpdatedAt:   o.UpdatedAt,
		checked:     data,
	}, nil
}

// Memory is one row of the memories table (agno_memories).
type Memory struct {
	MemoryID  string
	Memory    string
	Topics    []string
	Input     string
	Feedback  string
	AgentID   string
	TeamID    string
	UserID    string
	CreatedAt int64
	UpdatedAt int64
}

// UserMemoryStats summarises one user's memories.
type UserMemoryStats struct {
	UserID              string `json:"user_id"`
	TotalMemories       int    `json:"total_memories"`
	LastMemoryUpdatedAt int64  `json:"last_memory_updated_at"`
}
