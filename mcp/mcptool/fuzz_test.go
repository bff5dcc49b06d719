package mcptool

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/tool"
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

// FuzzSchemaInAToolSet: a schema checkSchema accepts becomes a tool the
// agent's tool set takes or refuses with an error (it compiles the schema
// to validate arguments), never a panic that would end the process.
func FuzzSchemaInAToolSet(f *testing.F) {
	for _, s := range []string{`{"type":"object"}`, `{"type":"object","properties":[]}`, `{"required":"x"}`,
		`{"type":"object","properties":{"a":{"$ref":"#/properties/b"}}}`, `{"minProperties":-1}`, `{"pattern":"("}`,
		`{"$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a~1b"}}}`, `{"$id":"x:y","$ref":"#/$defs/a"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		out, err := checkSchema(v, 4096)
		if err != nil {
			return
		}
		rt := &remoteTool{name: "t", def: tool.Definition{Name: "t", Description: "t", Parameters: out}}
		_, _ = tool.NewSet([]tool.Tool{rt})
	})
}

// A root without "type" (allowed by JSON Schema, sent by some servers) is
// given "type":"object": OpenAI refuses function parameters of any other
// type ('schema must be a JSON Schema of type: "object", got type: "None"')
// and fails the whole request.
func TestCheckSchema_RootWithoutTypeIsAnObject(t *testing.T) {
	for _, s := range []string{`{}`, `{"properties":{"a":{"type":"string"}},"required":["a"]}`} {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		out, err := checkSchema(v, 4096)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		var root map[string]any
		if err := json.Unmarshal(out, &root); err != nil || root["type"] != "object" {
			t.Errorf("%s became %s, want type object", s, out)
		}
		if props, _ := v.(map[string]any)["properties"]; props != nil && root["properties"] == nil {
			t.Errorf("%s lost its properties: %s", s, out)
		}
	}
}
