package db

import (
	"encoding/json"
	"reflect"
	"testing"
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
