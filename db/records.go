package db

import (
	"bytes"
	"encoding/json"
	"reflect"
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
	// Expect makes a write of this session conditional on the stored row
	// being the one the writer computed it from (a compare-and-set: writers
	// in different processes, two servers on one database or Agno beside
	// Agentry, then cannot overwrite each other's session_state and
	// session_metrics changes). Its zero value is an unconditional write
	// (the last write wins, as in Agno). A write whose expectation fails
	// writes nothing and is ErrSessionChanged; another user's row is still
	// ErrNotFound. Drivers never store it; the rows they return have none.
	Expect SessionExpect
}

// SessionExpect is the stored row a conditional session write expects
// (Session.Expect).
type SessionExpect struct {
	Row ExpectedRow
	// Data is the session_data the writer read (Row ExpectData), as the
	// store returned it: Session.SessionData of GetSession's row or of a
	// write's returned row. The stored column matches when a read would
	// return the same JSON value: the same bytes, or the same document in
	// another form (spacing, key order: Postgres's JSONB, a Python
	// writer's text). Empty: a row whose session_data is empty or null.
	Data json.RawMessage
}

// ExpectedRow is what a conditional session write expects to find.
type ExpectedRow uint8

const (
	// ExpectAnything: an unconditional write (the zero value).
	ExpectAnything ExpectedRow = iota
	// ExpectNoRow: no session with the id exists yet (a new session).
	ExpectNoRow
	// ExpectData: the session exists with SessionExpect.Data as its
	// session_data.
	ExpectData
)

// ExpectOf is the expectation of a write computed from s, a row as the
// store returned it (nil: none was found, the session is new).
func ExpectOf(s *Session) SessionExpect {
	if s == nil {
		return SessionExpect{Row: ExpectNoRow}
	}
	return SessionExpect{Row: ExpectData, Data: s.SessionData}
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

// Matches reports whether a stored session row is what e expects: exists
// says whether there is one, data is its session_data as a read returns it.
// Drivers that compare in Go use it; the others compare the same way in
// SQL.
func (e SessionExpect) Matches(exists bool, data json.RawMessage) bool {
	switch e.Row {
	case ExpectNoRow:
		return !exists
	case ExpectData:
		return exists && SameJSON(data, e.Data)
	}
	return true
}

// SameJSON reports whether two JSON column values are the same: the same
// bytes, both empty or null, or the same decoded value (numbers compared
// exactly, as lossless.UnmarshalNumbers reads them). A column read back
// from Postgres's JSONB or MySQL's JSON is normalised (spaces, key order),
// and a Python writer spaces its text, so comparing bytes alone would call
// the same value changed. Text that does not decode is the same only byte
// for byte.
func SameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if isNullJSON(a) || isNullJSON(b) {
		return isNullJSON(a) && isNullJSON(b)
	}
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	errX, errY := lossless.UnmarshalNumbers(a, &x), lossless.UnmarshalNumbers(b, &y)
	return errX == nil && errY == nil && reflect.DeepEqual(x, y)
}

// isNullJSON: an empty column or JSON null.
func isNullJSON(b []byte) bool { return len(b) == 0 || string(b) == "null" }
