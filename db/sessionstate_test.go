package db

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentryhq/agentry/internal/lossless"
)

// TestSessionStateOf reads session_state as Agno stores it, and tells a
// column that is not an object from one that holds no state.
func TestSessionStateOf(t *testing.T) {
	for _, c := range []struct {
		data string
		want map[string]any
		ok   bool
	}{
		{``, nil, true},
		{`null`, nil, true},
		{`{}`, nil, true},
		{`{"session_metrics":{"details":{"model":[{"id":"m","provider":"p"}]}}}`, nil, true},
		{`{"session_state":null}`, nil, true},
		{` {"session_name":"x", "session_state": {"n": 2, "big": 9007199254740993}} `,
			map[string]any{"n": 2.0, "big": json.Number("9007199254740993")}, true},
		{`{"session\u005fstate":{"a":"b"}}`, map[string]any{"a": "b"}, true},
		{`{"session_state":{"a":1},"session_state":{"a":2}}`, map[string]any{"a": 2.0}, true}, // the last, as encoding/json
		{`{"Session_State":{"a":1}}`, nil, true},                                              // Agno's key only
		{`{"session_state":"text"}`, nil, false},
		{`{"session_state":[1]}`, nil, false},
		{`[1]`, nil, false},
		{`{"session_state":{"a":1}`, nil, false},
		{`{"session_metrics":}`, nil, false},
	} {
		got, ok := SessionStateOf(json.RawMessage(c.data))
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("SessionStateOf(%s) = %v, %v; want %v, %v", c.data, got, ok, c.want, c.ok)
		}
	}
}

// FuzzSessionStateOfStored: the unchecked read of a stored session_data
// never panics, and on valid JSON answers as encoding/json reads Agno's
// member (by its exact name, the last one when repeated).
func FuzzSessionStateOfStored(f *testing.F) {
	for _, s := range []string{`{"session_state":{"a":1}}`, `{"session_metrics":{},"session_state":null}`, `null`, `[1]`,
		`{"session\u005fstate":{"b":[1,2]}}`, `{"session_state":{"a":1}`, `{"session_state"`, `{"x":}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gotOK := SessionStateOfStored(data)
		if !json.Valid(data) {
			return
		}
		want, wantOK := referenceState(data)
		if gotOK != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: stored %v %v, checked %v %v", data, got, gotOK, want, wantOK)
		}
	})
}

// referenceState reads session_state from valid data with encoding/json.
func referenceState(data []byte) (map[string]any, bool) {
	switch t := bytes.TrimSpace(data); {
	case len(t) == 0 || t[0] == 'n':
		return nil, true
	case t[0] != '{':
		return nil, false
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		panic(err)
	}
	raw, ok := members["session_state"]
	if !ok {
		return nil, true
	}
	state, err := lossless.UnmarshalExactObject(raw)
	return state, err == nil
}
