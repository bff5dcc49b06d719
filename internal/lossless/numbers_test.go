package lossless_test

import (
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/internal/lossless"
)

// TestUnmarshalNumbers_RefusesDataAfterTheValue: one JSON value and
// whitespace only, as json.Unmarshal takes; a stray ] or } after it is not
// ignored.
func TestUnmarshalNumbers_RefusesDataAfterTheValue(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"a":1}]`, `{"a":1}}`, `[1]]`, `{"a":1} x`, `1 2`, `{} {}`, `{"a":1},`} {
		var v any
		if err := lossless.UnmarshalNumbers([]byte(in), &v); err == nil {
			t.Errorf("%q: no error (read %v)", in, v)
		}
	}
	for _, in := range []string{`{"a":12345678901234567890}`, " [1.50] \n\t", `"s"`, `null`} {
		var v any
		if err := lossless.UnmarshalNumbers([]byte(in), &v); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// FuzzUnmarshalNumbers: exactly the valid JSON texts decode, and their
// numbers are written back as they were read.
func FuzzUnmarshalNumbers(f *testing.F) {
	for _, s := range []string{`{"a":12345678901234567890,"b":[1.0,-0,1e400]}`, `{"a":1}]`, ` 7 `, `[1] [2]`, `{"a":"\udcff"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		err := lossless.UnmarshalNumbers(data, &v)
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("valid %v, err %v: %q", valid, err, data)
		}
		if err != nil {
			return
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("decoded but does not encode: %v", err)
		}
		if d := jsontest.Diff(data, out); d != "" {
			t.Fatalf("numbers changed: %s\nin  %s\nout %s", d, data, out)
		}
	})
}
