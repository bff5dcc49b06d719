package migrate

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

var validSeeds = []string{
	`[]`, `{}`, `null`, `"a\u00e9\"b"`, `[1, -0.5e+3, true, false, null, {"a": [{}]}]`, `[{"run_id": "r\\1"}]`,
	`[1,]`, `{"a" 1}`, `"\x01"`, `01`, `-`, `1.`, `"\u12"`, `[`, `{"a":1}}`, ` [ ] `, `"\q"`, `1e`, `[1 2]`, `tru`,
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}

func FuzzDecodeLegacyRuns(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
		q, _ := json.Marshal(s)
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		elems, kind, err := decodeLegacyRuns(b, false)
		if (kind != "") != (err != nil) {
			t.Fatalf("kind %q with err %v", kind, err)
		}
		if kind != "" {
			return
		}
		var want []json.RawMessage
		inner, _ := unwrapJSON(b)
		if json.Unmarshal(inner, &want) != nil {
			t.Fatalf("decoded %q as an array but encoding/json cannot", inner)
		}
		if len(want) != len(elems) {
			t.Fatalf("%d elements, encoding/json finds %d", len(elems), len(want))
		}
		for i := range elems {
			if string(elems[i]) != string(want[i]) {
				t.Fatalf("element %d = %q, encoding/json %q", i, elems[i], want[i])
			}
			_, _, _ = elementToRun(legacySession{SessionID: "s"}, i, elems[i])
		}
	})
}

func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"a"`, `"\ud83d\ude80"`, `"\ud83d"`, `"\ud83dx"`, `"\u00e9\n\t\\\""`, `"\x"`, `"a` + "\x01" + `"`, `"\ude80\ud83d"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = bytes.TrimSpace(b) // callers trim; unquote takes the bare literal
		if len(b) == 0 || b[0] != '"' || !utf8.Valid(b) {
			return
		}
		var want string
		werr := json.Unmarshal(b, &want)
		got, err := unquote(b)
		if (err != nil) != (werr != nil) {
			t.Fatalf("unquote(%q) err = %v, encoding/json err = %v", b, err, werr)
		}
		if err == nil && string(got) != want {
			t.Fatalf("unquote(%q) = %q, encoding/json %q", b, got, want)
		}
	})
}

func TestHasNULEscape_OnlyAnUnescapedBackslash(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		`{"a":"x\u0000y"}`: true,
		`{"a":"\\u0000"}`:  false, // an escaped backslash, then text
		`{"a":"\\\u0000"}`: true,
		`{"u0000":"x"}`:    false,
		`{"a":"\u00001"}`:  true,
		`{"a":"\u0001"}`:   false,
		`{"a":"x"}`:        false,
		`"\u0000"`:         true,
	} {
		if got := hasNULEscape([]byte(in)); got != want {
			t.Errorf("hasNULEscape(%s) = %v, want %v", in, got, want)
		}
	}
}

func TestHasUnpairedSurrogate_OnlyEscapesWithoutTheirPair(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		`{"a":"\ud83d\ude00"}`:   false,
		`{"a":"\uD83D\uDE00x"}`:  false,
		`{"a":"x\ud83d"}`:        true,
		`{"a":"\ud83dx"}`:        true,
		`{"a":"\ude00"}`:         true,
		`{"a":"\ud83d\u0041"}`:   true,
		`{"a":"\ud83d\ud83d"}`:   true,
		`{"a":"\\ud83d"}`:        false, // an escaped backslash, then text
		`{"a":"\\\ud83d"}`:       true,
		`{"a":"\\\\ud83d"}`:      false,
		`{"a":"\u00e9\n\"\ud8"}`: false,
		`{"a":"é"}`:              false,
		`"\ud83d`:                true,
	} {
		if got := hasUnpairedSurrogate([]byte(in)); got != want {
			t.Errorf("hasUnpairedSurrogate(%s) = %v, want %v", in, got, want)
		}
	}
}

func TestSeconds_OnlyNumbersOfInt64sRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{`1700000000`, 1700000000, true},
		{`1700000000.9`, 1700000000, true},
		{`"1700000001"`, 1700000001, true},
		{`-1.5`, -1, true},
		{`1e300`, 0, false},
		{`-1e300`, 0, false},
		{`9223372036854775808.0`, 0, false},
		{`"NaN"`, 0, false},
		{`"Infinity"`, 0, false},
		{`"yesterday"`, 0, false},
		{`null`, 0, false},
	} {
		if got, ok := seconds([]byte(tc.in)); got != tc.want || ok != tc.ok {
			t.Errorf("seconds(%s) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
