package migrate

import "testing"

// The runs table's JSON is the server's rendering of the copied element:
// Postgres JSONB and MySQL JSON reorder keys, drop spaces and rewrite
// numbers, so only a decoded comparison tells a changed run.
func TestSameJSON_ComparesValuesNotRenderings(t *testing.T) {
	t.Parallel()
	for _, c := range sameJSONCases {
		if got := sameJSON([]byte(c.a), []byte(c.b)); got != c.same {
			t.Errorf("sameJSON(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// The copy's row digest tells the same values apart as sameJSON does: a row
// the database re-rendered keeps its digest, a changed one does not.
func TestContentDigest_AgreesWithSameJSON(t *testing.T) {
	t.Parallel()
	cases := append(sameJSONCases, []struct {
		a, b string
		same bool
	}{
		{`{"t": -0.0}`, `{"t": 0}`, true},
		{`{"t": 0.000120}`, `{"t": 1.2e-4}`, true},
		{`{"t": 120}`, `{"t": 12}`, false},
		{`{"t": 1e99999999999}`, `{"t": 1e99999999999}`, true},
		// Exponents beyond int and beyond what big.Rat parses: by value too.
		{`{"t": 0E2000000000}`, `{"t": 0}`, true},
		{`{"t": 10e1000000}`, `{"t": 1e1000001}`, true},
		{`{"t": 1e99999999999999999999}`, `{"t": 0.1e100000000000000000000}`, true},
		{`{"t": 1e99999999999999999999}`, `{"t": 1e99999999999999999998}`, false},
		{`{"t": -1e-99999999999999999999}`, `{"t": -10e-100000000000000000000}`, true},
		{`{"ab": "c"}`, `{"a": "bc"}`, false},
		{`[["a"], "b"]`, `[["a", "b"]]`, false},
	}...)
	for _, c := range cases {
		if got := contentDigest([]byte(c.a)) == contentDigest([]byte(c.b)); got != c.same {
			t.Errorf("contentDigest(%s) == contentDigest(%s) is %v, want %v", c.a, c.b, got, c.same)
		}
		if got := sameJSON([]byte(c.a), []byte(c.b)); got != c.same {
			t.Errorf("sameJSON(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// FuzzContentDigest: equal digests exactly when sameJSON holds, no panic.
func FuzzContentDigest(f *testing.F) {
	for _, c := range sameJSONCases {
		f.Add(c.a, c.b)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if same, eq := sameJSON([]byte(a), []byte(b)), contentDigest([]byte(a)) == contentDigest([]byte(b)); same != eq {
			t.Errorf("sameJSON(%q, %q) = %v but equal digests = %v", a, b, same, eq)
		}
	})
}

var sameJSONCases = []struct {
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
}
