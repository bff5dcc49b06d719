package sqlstore

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestJSONWithoutNUL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":"x"}`, `{"a":"x"}`},
		{`{"a":"x\u0000y"}`, `{"a":"xy"}`},
		{`{"a":"\u0000\u0000"}`, `{"a":""}`},
		{`{"a":"x\\u0000y"}`, `{"a":"x\\u0000y"}`},
		{`{"a":"x\\\u0000y"}`, `{"a":"x\\y"}`},
		{`{"a":"\u00001"}`, `{"a":"1"}`},
		{`{"a":"\u0001"}`, `{"a":"\u0001"}`},
		{`["\"\u0000"]`, `["\""]`},
	} {
		if got := string(jsonWithoutNUL([]byte(c.in))); got != c.want {
			t.Errorf("jsonWithoutNUL(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// FuzzJSONWithoutNUL: on valid JSON the result is valid JSON holding the
// same value with every U+0000 removed from its strings.
func FuzzJSONWithoutNUL(f *testing.F) {
	for _, s := range []string{`{"a":"x\u0000y"}`, `["\\u0000","\\\u0000"]`, `{"\u0000k":1}`, `"\u0000"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var want any
		if json.Unmarshal([]byte(in), &want) != nil {
			return
		}
		out := jsonWithoutNUL([]byte(in))
		var got any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("jsonWithoutNUL(%q) = %q, not JSON: %v", in, out, err)
		}
		want, ok := stripNUL(want)
		if !ok {
			return // two keys equal without their NULs: which one is kept is the parser's choice
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("jsonWithoutNUL(%q) = %q", in, out)
		}
	})
}

// stripNUL is v with U+0000 removed from its strings and keys; false when
// two keys of an object become one.
func stripNUL(v any) (any, bool) {
	ok := true
	switch v := v.(type) {
	case string:
		return strings.ReplaceAll(v, "\x00", ""), true
	case []any:
		for i := range v {
			var k bool
			v[i], k = stripNUL(v[i])
			ok = ok && k
		}
	case map[string]any:
		m := map[string]any{}
		for k, x := range v {
			k = strings.ReplaceAll(k, "\x00", "")
			if _, dup := m[k]; dup {
				ok = false
			}
			var xok bool
			m[k], xok = stripNUL(x)
			ok = ok && xok
		}
		return m, ok
	}
	return v, ok
}
