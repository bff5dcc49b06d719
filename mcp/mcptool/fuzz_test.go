package mcptool

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzCheckSchema: any JSON a server sends as a schema is accepted or refused
// with ErrBadSchema, never a panic, and what is accepted is a JSON object.
func FuzzCheckSchema(f *testing.F) {
	for _, s := range []string{`{"type":"object"}`, `{"$ref":"#"}`, `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`,
		`{"type":"object","properties":{"x":{"$ref":"http://evil/s.json"}}}`, `[[[[]]]]`, `"x"`, `{"type":"string"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		out, err := checkSchema(v, 4096)
		if err != nil {
			if !errors.Is(err, ErrBadSchema) {
				t.Fatalf("error %v does not wrap ErrBadSchema", err)
			}
			return
		}
		var m map[string]any
		if json.Unmarshal(out, &m) != nil {
			t.Fatalf("accepted a non-object: %s", out)
		}
	})
}

func TestCheckSchema_Cases(t *testing.T) {
	for _, c := range []struct {
		schema string
		ok     bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, true},
		{`{"type":"object","$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"},"y":{"$ref":"#/$defs/a"}}}`, true},
		{`{"$ref":"#"}`, false},
		{`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"properties":{"c":{"$ref":"#/$defs/a"}}}}}`, false},
		{`{"properties":{"x":{"$ref":"https://example.com/s.json"}}}`, false},
		{`{"type":"array"}`, false},
		{`[]`, false},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.schema), &v); err != nil {
			t.Fatal(err)
		}
		if _, err := checkSchema(v, 4096); (err == nil) != c.ok {
			t.Errorf("%s: %v", c.schema, err)
		}
	}
}
