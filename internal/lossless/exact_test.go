package lossless

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestUnmarshalExact_KeepsWhatFloat64CannotGiveBack(t *testing.T) {
	in := `{"id":9007199254740993,"small":42,"neg":-9223372036854775808,"huge":1e400,"f":0.1,` +
		`"digits":3.14159265358979323846264338327950288,"pow":10000000000000000000,` +
		`"list":[1,18446744073709551615,{"deep":123456789012345678901234567890}],"s":"9007199254740993","b":true,"n":null}`
	m, err := UnmarshalExactObject([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id": json.Number("9007199254740993"), "small": 42.0, "neg": json.Number("-9223372036854775808"), // a float64, but written back as ...776000
		"huge": json.Number("1e400"), "f": 0.1, "digits": json.Number("3.14159265358979323846264338327950288"),
		"pow":  1e19,
		"list": []any{1.0, json.Number("18446744073709551615"), map[string]any{"deep": json.Number("123456789012345678901234567890")}},
		"s":    "9007199254740993", "b": true, "n": nil,
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got  %#v\nwant %#v", m, want)
	}
	// Written back, every number reads as written (or as the same float64).
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var again any
	if err := UnmarshalExact(out, &again); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, any(want)) {
		t.Fatalf("round trip: %s", out)
	}
}

func TestUnmarshalExact_Refusals(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a":1} {}`, `[1,2`} {
		var v any
		if err := UnmarshalExact([]byte(in), &v); err == nil {
			t.Errorf("UnmarshalExact(%q) accepted", in)
		}
	}
	for _, in := range []string{`[1]`, `"x"`, `1`} {
		if _, err := UnmarshalExactObject([]byte(in)); err == nil {
			t.Errorf("UnmarshalExactObject(%q) accepted", in)
		}
	}
	if m, err := UnmarshalExactObject([]byte(`null`)); err != nil || m != nil {
		t.Errorf("null: %v, %v", m, err)
	}
}

// FuzzUnmarshalExact: whatever decodes, encodes again, and reads back as
// the same value (nothing is rounded on the way).
func FuzzUnmarshalExact(f *testing.F) {
	for _, s := range []string{`{"a":9007199254740993}`, `[1e400,-0,0.1]`, `{"x":{"y":[123456789012345678901]}}`, `"s"`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if UnmarshalExact(data, &v) != nil {
			return
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%q decoded to a value that does not encode: %v", data, err)
		}
		var again any
		if err := UnmarshalExact(out, &again); err != nil {
			t.Fatalf("%q re-encoded as %q, which does not decode: %v", data, out, err)
		}
		if !reflect.DeepEqual(v, again) {
			t.Fatalf("%q: %#v became %#v through %q", data, v, again, out)
		}
	})
}
