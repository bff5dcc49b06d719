package lossless_test

import (
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/internal/lossless"
)

type inner struct {
	N int `json:"n,omitempty"`
}

type embedded struct {
	Tokens int `json:"tokens,omitempty"`
}

type record struct {
	embedded
	ID      string            `json:"id"`
	Name    string            `json:"name,omitempty"`
	OK      bool              `json:"ok,omitempty"`
	Count   int64             `json:"count,omitempty"`
	At      float64           `json:"at,omitempty"`
	Ptr     *bool             `json:"ptr,omitempty"`
	List    []string          `json:"list,omitempty"`
	Map     map[string]int    `json:"map,omitzero"`
	Any     any               `json:"any,omitempty"`
	Raw     json.RawMessage   `json:"raw,omitempty"`
	Inner   *inner            `json:"inner,omitempty"`
	Ignored string            `json:"-"`
	Extra   map[string]string `json:"-"`
}

func roundTrip(t *testing.T, in string) (record, map[string]json.RawMessage, []byte) {
	t.Helper()
	var r record
	extra, err := lossless.Unmarshal([]byte(in), &r)
	if err != nil {
		t.Fatalf("Unmarshal(%s): %v", in, err)
	}
	cp := r
	out, err := lossless.Marshal(&cp, extra)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return r, extra, out
}

func TestUnmarshal_KeepsWhatTheStructCannotWriteBack(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		check    func(record, map[string]json.RawMessage) bool
	}{
		{"unknown members", `{"id":"a","future":{"x":[1,2]},"n2":null}`,
			func(r record, x map[string]json.RawMessage) bool {
				return string(x["future"]) == `{"x":[1,2]}` && string(x["n2"]) == "null"
			}},
		{"empty values an omitempty field drops", `{"id":"a","name":"","ok":false,"count":0,"at":0.0,"ptr":null,"list":[],"any":null,"inner":null}`,
			func(r record, x map[string]json.RawMessage) bool { return len(x) == 8 }},
		{"a set pointer to false is written, not kept", `{"id":"a","ptr":false}`,
			func(r record, x map[string]json.RawMessage) bool { return r.Ptr != nil && !*r.Ptr && len(x) == 0 }},
		{"null in a field without omitempty", `{"id":null}`,
			func(r record, x map[string]json.RawMessage) bool { return r.ID == "" && string(x["id"]) == "null" }},
		{"names differing in case are not merged", `{"id":"a","Name":"upper","name":"lower"}`,
			func(r record, x map[string]json.RawMessage) bool {
				return r.Name == "lower" && string(x["Name"]) == `"upper"`
			}},
		{"a value the field cannot hold", `{"id":"a","list":"not a list","ok":"yes"}`,
			func(r record, x map[string]json.RawMessage) bool { return r.List == nil && !r.OK && len(x) == 2 }},
		{"an integer stored as a float", `{"id":"a","count":1700000000.75}`,
			func(r record, x map[string]json.RawMessage) bool { return r.Count == 1700000000 }},
		{"an integer with an exponent", `{"id":"a","count":1e3}`,
			func(r record, x map[string]json.RawMessage) bool { return r.Count == 1000 }},
		{"numbers in strings", `{"id":"a","count":"42","at":"1.5"}`,
			func(r record, x map[string]json.RawMessage) bool { return r.Count == 42 && r.At == 1.5 }},
		{"ISO 8601 time in a float field", `{"id":"a","at":"2025-01-02T03:04:05.5+00:00"}`,
			func(r record, x map[string]json.RawMessage) bool { return r.At == 1735787045.5 }},
		{"promoted fields of an embedded struct", `{"id":"a","tokens":7}`,
			func(r record, x map[string]json.RawMessage) bool { return r.Tokens == 7 && len(x) == 0 }},
		{"escaped and unicode strings", `{"id":"a\u00e9\"b","name":"日本 🚀"}`,
			func(r record, x map[string]json.RawMessage) bool { return r.ID == `aé"b` && r.Name == "日本 🚀" }},
		{"a json:\"-\" field is not read", `{"id":"a","Ignored":"x","Extra":"y"}`,
			func(r record, x map[string]json.RawMessage) bool { return r.Ignored == "" && len(x) == 2 }},
		{"an empty map under omitzero is written, a null one kept", `{"id":"a","map":{}}`,
			func(r record, x map[string]json.RawMessage) bool { return r.Map != nil && len(x) == 0 }},
		{"awkward member syntax", "{ \"id\" : \"a\" ,\n\t\"x\\u0041\": {\"s\": \"}{][\\\"\", \"t\": [ 1 , {\"a\": \"\\\\\"} ]} , \"count\" :-0 }",
			func(r record, x map[string]json.RawMessage) bool { return r.ID == "a" && len(x) == 2 && x["xA"] != nil }},
		{"a repeated member: the last wins", `{"id":"a","id":"b"}`,
			func(r record, x map[string]json.RawMessage) bool { return r.ID == "b" }},
		{"huge numbers stay as stored", `{"id":"a","at":1e400,"count":123456789012345678901234567890,"any":12345678901234567890123}`,
			func(r record, x map[string]json.RawMessage) bool {
				return r.At == 0 && r.Count == 0 && r.Any == 1.2345678901234568e22 && len(x) == 3
			}},
		{"numbers float64 keeps exactly are not kept", `{"id":"a","any":{"d":0.6120934999966994,"i":9007199254740992,"s":"12345678901234567890"}}`,
			func(r record, x map[string]json.RawMessage) bool { return len(x) == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, extra, out := roundTrip(t, tt.in)
			if !tt.check(r, extra) {
				t.Errorf("decoded %+v, extra %s", r, mustJSON(extra))
			}
			if d := jsontest.Diff([]byte(tt.in), out); d != "" {
				t.Errorf("round trip: %s\nin  %s\nout %s", d, tt.in, out)
			}
		})
	}
}

func TestMarshal_GoValuesWinOverStoredForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		edit     func(*record)
		want     string
	}{
		{"a field set since it was read", `{"id":"a","ok":false,"name":""}`, func(r *record) { r.OK, r.Name = true, "n" }, `{"id":"a","ok":true,"name":"n"}`},
		{"a field cleared since it was read is dropped", `{"id":"a","list":["x"]}`, func(r *record) { r.List = nil }, `{"id":"a"}`},
		{"a lenient value changed is written as Go writes it", `{"id":"a","count":5.5}`, func(r *record) { r.Count = 6 }, `{"id":"a","count":6}`},
		{"a lenient value unchanged keeps its stored form", `{"id":"a","at":"2025-01-02T03:04:05Z"}`, func(r *record) {}, `{"id":"a","at":"2025-01-02T03:04:05Z"}`},
		{"an inexact number changed in Go is written as Go writes it", `{"id":"a","any":[12345678901234567890123]}`, func(r *record) { r.Any = []any{1.0} }, `{"id":"a","any":[1]}`},
		{"an inexact number unchanged keeps its stored form", `{"id":"a","any":{"big":12345678901234567890123}}`, func(r *record) {}, `{"id":"a","any":{"big":12345678901234567890123}}`},
		{"a stored null replaces the zero value Go writes", `{"id":null}`, func(r *record) {}, `{"id":null}`},
		{"but not once the field is set", `{"id":null}`, func(r *record) { r.ID = "x" }, `{"id":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r record
			extra, err := lossless.Unmarshal([]byte(tt.in), &r)
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(&r)
			out, err := lossless.Marshal(&r, extra)
			if err != nil {
				t.Fatal(err)
			}
			if d := jsontest.Diff([]byte(tt.want), out); d != "" {
				t.Errorf("%s\nout %s", d, out)
			}
		})
	}
}

func TestUnmarshal_NotAnObject(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`"s"`, `[1]`, `3`, `true`, `{`, ``} {
		var r record
		if _, err := lossless.Unmarshal([]byte(in), &r); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	var r record
	if extra, err := lossless.Unmarshal([]byte(`null`), &r); err != nil || extra != nil {
		t.Errorf("null: %v, %v", extra, err)
	}
}

func TestMarshal_WithoutExtraIsEncodingJSON(t *testing.T) {
	t.Parallel()
	r := record{ID: "a", Count: 3}
	got, err := lossless.Marshal(&r, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(&r)
	if string(got) != string(want) {
		t.Errorf("got %s, want %s", got, want)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestMarshal_LeavesHTMLEscapingToTheCaller(t *testing.T) {
	t.Parallel()
	r := record{ID: "<a&b>"}
	got, err := lossless.Marshal(&r, map[string]json.RawMessage{"note": json.RawMessage(`"<i>"`)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"<a&b>","note":"<i>"}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := lossless.Marshal(&r, map[string]json.RawMessage{"bad": json.RawMessage(`{`)}); err == nil {
		t.Error("an invalid Extra value was written")
	}
}

// TestUnmarshal_KeepsWhatPythonReadsDifferently: what Agno's Python writes
// and Go would write back as another value for Python (a float with an
// integer value becomes an int) round-trips as written, in every kind of
// field that can hold it; Go values set since still win.
func TestUnmarshal_KeepsWhatPythonReadsDifferently(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		edit     func(*record)
		want     string // "": the input
	}{
		{"a float with an integer value in a float field", `{"id":"a","at":2.0}`, nil, ""},
		{"a float in exponent form", `{"id":"a","at":1e+16}`, nil, ""},
		{"negative zero", `{"id":"a","at":-0.0}`, nil, ""},
		{"floats with integer values in interface values", `{"id":"a","any":{"f":2.0,"e":1E2,"l":[1.0,2.5,3]}}`, nil, ""},
		{"a changed float is written as Go writes it", `{"id":"a","at":2.0}`, func(r *record) { r.At = 3 }, `{"id":"a","at":3}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r record
			extra, err := lossless.Unmarshal([]byte(tt.in), &r)
			if err != nil {
				t.Fatal(err)
			}
			if tt.edit != nil {
				tt.edit(&r)
			}
			out, err := lossless.Marshal(&r, extra)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if d := jsontest.DiffPython([]byte(want), out); d != "" {
				t.Errorf("%s\nout %s", d, out)
			}
		})
	}
}

// TestUnmarshal_ReadsExactValuesWithoutKeepingThem: what Go writes back as
// Python wrote it (surrogate pairs, other escapes, fractions, integers) is
// not kept twice; nor is a lone surrogate, read as U+FFFD: Postgres and
// MariaDB refuse it in JSON, so it is not written back.
func TestUnmarshal_ReadsExactValuesWithoutKeepingThem(t *testing.T) {
	t.Parallel()
	in := `{"id":"\ud83d\ude00 \u00e9 \"q\" \\udc80","name":"n\udcff","at":2.5,"count":3,"list":["\ud83d\ude00"],"any":{"a":[1,2.5,1e-7,"\u0000","\ud800"]}}`
	var r record
	extra, err := lossless.Unmarshal([]byte(in), &r)
	if err != nil {
		t.Fatal(err)
	}
	if len(extra) != 0 {
		t.Errorf("kept %s", mustJSON(extra))
	}
	if r.ID != "😀 é \"q\" \\udc80" || r.Name != "n\ufffd" {
		t.Errorf("id %q, name %q", r.ID, r.Name)
	}
}

// FuzzUnmarshal: any bytes decode without a panic, and what decodes writes
// back as the same JSON value, as Python reads it (the package's promise).
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","at":2.0,"any":{"f":-0.0,"s":"\udcff"},"name":"\ud83d\ude00","list":["\ud800"]}`,
		`{"id":null,"count":1.5,"at":"2025-01-02T03:04:05Z","map":{"a":1},"inner":{"n":2},"x":[1e400]}`,
		`{"id":"","tokens":7,"ok":false,"ptr":null,"raw":{"z":1},"any":12345678901234567890123}`,
		`{"id":"a","id":"b","Name":"c"}`,
	} {
		f.Add([]byte(s))
	}
	// record without Inner: a struct field without lossless methods of its
	// own loses what it does not model, as encoding/json does.
	type fuzzed struct {
		embedded
		ID    string          `json:"id"`
		Name  string          `json:"name,omitempty"`
		OK    bool            `json:"ok,omitempty"`
		Count int64           `json:"count,omitempty"`
		At    float64         `json:"at,omitempty"`
		Ptr   *bool           `json:"ptr,omitempty"`
		List  []string        `json:"list,omitempty"`
		Map   map[string]int  `json:"map,omitzero"`
		Any   any             `json:"any,omitempty"`
		Raw   json.RawMessage `json:"raw,omitempty"`
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r fuzzed
		extra, err := lossless.Unmarshal(data, &r)
		if err != nil {
			return
		}
		out, err := lossless.Marshal(&r, extra)
		if err != nil {
			t.Fatalf("decoded but does not encode: %v\ninput %q", err, data)
		}
		if !json.Valid(out) {
			t.Fatalf("wrote invalid JSON %q", out)
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(data, &members) != nil || members["id"] == nil {
			return // null, or no id: written as "" (the field has no omitempty)
		}
		if d := jsontest.DiffPython(data, out); d != "" {
			t.Fatalf("round trip changed the value: %s\nin  %s\nout %s", d, data, out)
		}
	})
}

type Promoted struct {
	N int    `json:"n,omitempty"`
	S string `json:"s,omitempty"`
}

type withPointer struct {
	ID string `json:"id"`
	*Promoted
}

type withUnexportedPointer struct {
	ID string `json:"id"`
	*promoted
}

type promoted struct {
	N int `json:"n,omitempty"`
}

// TestUnmarshal_ReadsFieldsPromotedThroughAnEmbeddedPointer: members of an
// embedded pointer's struct (run.Event's *TaskEvent) are read into it, as
// encoding/json reads them, not set aside; a nil one writes none of them.
func TestUnmarshal_ReadsFieldsPromotedThroughAnEmbeddedPointer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		check func(withPointer, map[string]json.RawMessage) bool
	}{
		{`{"id":"a","n":2,"s":"x"}`, func(v withPointer, x map[string]json.RawMessage) bool {
			return v.Promoted != nil && v.N == 2 && v.S == "x" && len(x) == 0
		}},
		{`{"id":"a"}`, func(v withPointer, x map[string]json.RawMessage) bool { return v.Promoted == nil && len(x) == 0 }},
		{`{"id":"a","n":2.0,"s":null}`, func(v withPointer, x map[string]json.RawMessage) bool {
			return v.Promoted != nil && v.N == 2 && len(x) == 2
		}},
		{`{"id":"a","promoted":{"n":1}}`, func(v withPointer, x map[string]json.RawMessage) bool { return v.Promoted == nil && len(x) == 1 }},
	}
	for _, tt := range tests {
		var v withPointer
		extra, err := lossless.Unmarshal([]byte(tt.in), &v)
		if err != nil {
			t.Fatal(err)
		}
		if !tt.check(v, extra) {
			t.Errorf("%s: decoded %+v (%+v), extra %s", tt.in, v, v.Promoted, mustJSON(extra))
		}
		out, err := lossless.Marshal(&v, extra)
		if err != nil {
			t.Fatal(err)
		}
		if d := jsontest.DiffPython([]byte(tt.in), out); d != "" || !json.Valid(out) {
			t.Errorf("%s: round trip %s\nout %s", tt.in, d, out)
		}
	}
	// encoding/json cannot allocate an unexported embedded pointer: its
	// members are kept as stored.
	var u withUnexportedPointer
	if extra, err := lossless.Unmarshal([]byte(`{"id":"a","n":2}`), &u); err != nil || u.promoted != nil || len(extra) != 1 {
		t.Errorf("unexported: %+v, %s, %v", u, mustJSON(extra), err)
	}
	// Stored forms of a nil pointer's fields are written as stored.
	out, err := lossless.Marshal(&withPointer{ID: "a"}, map[string]json.RawMessage{"n": json.RawMessage(`0`)})
	if err != nil || string(out) != `{"id":"a","n":0}` {
		t.Errorf("got %s, %v", out, err)
	}
}
