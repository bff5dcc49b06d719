package db

import "testing"

func TestSameJSON(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[true,null]}`, `{"a":1,"b":[true,null]}`, true},
		{`{"b":[true,null],"a":1}`, `{"a": 1, "b": [true, null]}`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":9007199254740993}`, `{"a":9007199254740992}`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
		{`{"a":1}`, ``, false},
		{``, ``, true},
		{`null`, ``, true},
		{` null `, `null`, true},
		{`{}`, ``, false},
		{`{"a":`, `{"a":1}`, false},
		{`{"a":`, `{"a":`, true},
	} {
		if got := SameJSON([]byte(c.a), []byte(c.b)); got != c.want {
			t.Errorf("SameJSON(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := SameJSON([]byte(c.b), []byte(c.a)); got != c.want {
			t.Errorf("SameJSON(%s, %s) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

func TestSessionExpect_Matches(t *testing.T) {
	for _, c := range []struct {
		name   string
		e      SessionExpect
		exists bool
		data   string
		want   bool
	}{
		{"unconditional, no row", SessionExpect{}, false, "", true},
		{"unconditional, a row", SessionExpect{}, true, `{"a":1}`, true},
		{"no row expected, none", ExpectOf(nil), false, "", true},
		{"no row expected, one", ExpectOf(nil), true, "", false},
		{"data expected, no row", ExpectOf(&Session{SessionData: []byte(`{"a":1}`)}), false, "", false},
		{"data expected, same", ExpectOf(&Session{SessionData: []byte(`{"a":1}`)}), true, `{"a": 1}`, true},
		{"data expected, changed", ExpectOf(&Session{SessionData: []byte(`{"a":1}`)}), true, `{"a":2}`, false},
		{"empty expected, null stored", ExpectOf(&Session{}), true, `null`, true},
		{"empty expected, data stored", ExpectOf(&Session{}), true, `{"a":1}`, false},
	} {
		if got := c.e.Matches(c.exists, []byte(c.data)); got != c.want {
			t.Errorf("%s: Matches = %v, want %v", c.name, got, c.want)
		}
	}
}
