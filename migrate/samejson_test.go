package migrate

import "testing"

// The runs table's JSON is the server's rendering of the copied element:
// Postgres JSONB and MySQL JSON reorder keys, drop spaces and rewrite
// numbers, so only a decoded comparison tells a changed run.
func TestSameJSON_ComparesValuesNotRenderings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{`{"a": 1, "b": [1, 2]}`, `{"b":[1,2],"a":1}`, true},
		{`{"t": 1.50}`, `{"t": 1.5}`, true},
		{`{"t": 1E2}`, `{"t": 100}`, true},
		{`{"n": 9007199254740993}`, `{"n": 9007199254740992}`, false},
		{`{"s": "\u00e9"}`, `{"s": "é"}`, true},
		{`{"status": "PAUSED"}`, `{"status": "COMPLETED"}`, false},
		{`{"a": 1}`, `{"a": 1, "b": null}`, false},
		{`{"a": "1"}`, `{"a": 1}`, false},
		{`{"a": [1, 2]}`, `{"a": [2, 1]}`, false},
		{`"{\"a\": 1}"`, `{"a":1}`, true}, // string-encoded (SQLite's 2.x writer)
		{`{"a": 1`, `{"a": 1}`, false},
	} {
		if got := sameJSON([]byte(c.a), []byte(c.b)); got != c.same {
			t.Errorf("sameJSON(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
