package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/tool"
)

type strictNode struct {
	Name     string       `json:"name"`
	Children []strictNode `json:"children,omitempty"`
}

type strictArgs struct {
	City  string    `json:"city"`
	Units string    `json:"units,omitempty" enum:"c,f"`
	Days  int       `json:"days,omitempty"`
	Tags  []string  `json:"tags,omitempty"`
	Where *struct { // optional nested object
		Lat float64 `json:"lat"`
	} `json:"where,omitempty"`
	Tree strictNode `json:"tree"`
}

// TestFunc_StrictSchemaListsEveryPropertyAsRequired: with Strict, the schema
// sent is in the form OpenAI's strict function calling accepts (its API
// refused the inferred one: "'required' is required to be supplied and to be
// an array including every key in properties"): every object requires all
// its properties and refuses others, and the optional ones take null, which
// decodes as the zero value. Arguments leaving optional properties out still
// validate (a provider may not enforce the schema).
func TestFunc_StrictSchemaListsEveryPropertyAsRequired(t *testing.T) {
	t.Parallel()
	var got strictArgs
	tl := mustFunc(t, tool.FuncConfig{Name: "weather", Description: "d", Strict: true}, func(_ context.Context, in strictArgs) (string, error) {
		got = in
		return "ok", nil
	})
	var schema map[string]any
	if err := json.Unmarshal(tl.Definition().Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	var checkObjects func(path string, s map[string]any)
	checkObjects = func(path string, s map[string]any) {
		for k, v := range s {
			switch sub := v.(type) {
			case map[string]any:
				checkObjects(path+"/"+k, sub)
			case []any:
				for _, e := range sub {
					if m, ok := e.(map[string]any); ok {
						checkObjects(path+"/"+k, m)
					}
				}
			}
		}
		props, ok := s["properties"].(map[string]any)
		if !ok {
			return
		}
		if s["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties = %v", path, s["additionalProperties"])
		}
		req, _ := s["required"].([]any)
		if len(req) != len(props) {
			t.Errorf("%s: required %v, properties %d", path, req, len(props))
		}
	}
	checkObjects("#", schema)
	props := schema["properties"].(map[string]any)
	if !reflect.DeepEqual(props["units"], map[string]any{"type": []any{"string", "null"}, "enum": []any{"c", "f", nil}}) {
		t.Errorf("units = %v", props["units"])
	}
	if props["city"].(map[string]any)["type"] != "string" {
		t.Errorf("city (required) = %v", props["city"])
	}

	set := mustSet(t, tl)
	for _, args := range []string{
		`{"city":"Oslo","units":null,"days":null,"tags":null,"where":null,"tree":{"name":"r","children":null}}`,
		`{"city":"Oslo","tree":{"name":"r"}}`,
	} {
		got = strictArgs{Days: -1}
		if res := set.Execute(context.Background(), call("weather", args)); res.Err != nil {
			t.Fatalf("%s: %v", args, res.Err)
		}
		if got.City != "Oslo" || got.Units != "" || got.Days != 0 || got.Tags != nil || got.Where != nil || got.Tree.Name != "r" {
			t.Errorf("%s decoded as %+v", args, got)
		}
	}
	if res := set.Execute(context.Background(), call("weather", `{"city":null,"tree":{"name":"r"}}`)); !errors.Is(res.Err, tool.ErrInvalidArguments) {
		t.Errorf("a required property given null: %v", res.Err)
	}
	if res := set.Execute(context.Background(), call("weather", `{"city":"x","tree":{"name":"r"},"extra":1}`)); !errors.Is(res.Err, tool.ErrInvalidArguments) {
		t.Errorf("an unknown property: %v", res.Err)
	}
}

// TestFunc_StrictRefusesWhatItCannotDescribe: a map or a field of any JSON
// value has no strict form; Func says which.
func TestFunc_StrictRefusesWhatItCannotDescribe(t *testing.T) {
	t.Parallel()
	_, err := tool.Func(tool.FuncConfig{Name: "m", Description: "d", Strict: true}, func(context.Context, struct {
		Labels map[string]string `json:"labels"`
	}) (string, error) {
		return "", nil
	})
	if err == nil || !strings.Contains(err.Error(), "/properties/labels is a map") {
		t.Errorf("map field: %v", err)
	}
	_, err = tool.Func(tool.FuncConfig{Name: "a", Description: "d", Strict: true}, func(context.Context, struct {
		Any json.RawMessage `json:"any"`
	}) (string, error) {
		return "", nil
	})
	if err == nil || !strings.Contains(err.Error(), "/properties/any takes any JSON value") {
		t.Errorf("any-valued field: %v", err)
	}
	// Without Strict both are fine.
	if _, err := tool.Func(tool.FuncConfig{Name: "m", Description: "d"}, func(context.Context, struct {
		Labels map[string]string `json:"labels"`
	}) (string, error) {
		return "", nil
	}); err != nil {
		t.Error(err)
	}
}

// TestStrictSchema_DraftSevenDefinitionsAreStrictToo: a schema keeping its
// subschemas under draft 7's "definitions" (as many generators write it)
// was sent with those objects untouched (no additionalProperties false, not
// every property required), a form strict providers refuse; they are
// rewritten as "$defs" are.
func TestStrictSchema_DraftSevenDefinitionsAreStrictToo(t *testing.T) {
	t.Parallel()
	sent, _, err := tool.StrictSchema(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/definitions/A"}},"required":["a"],` +
		`"definitions":{"A":{"type":"object","properties":{"x":{"type":"string"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Definitions map[string]struct {
			AdditionalProperties *bool    `json:"additionalProperties"`
			Required             []string `json:"required"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(sent, &s); err != nil {
		t.Fatal(err)
	}
	if a := s.Definitions["A"]; a.AdditionalProperties == nil || *a.AdditionalProperties || len(a.Required) != 1 {
		t.Fatalf("definitions/A sent as %s", sent)
	}
}

// TestStrictSchema_RefusesCompositionStrictModeDoesNotTake: a schema with
// allOf, oneOf, not, a conditional or tuple items, anywhere, or an anyOf at
// its root, was sent as strict with those parts unchanged (a provider
// refuses the request: the whole run fails at its first model call) or,
// inside allOf, with objects that could no longer be satisfied together.
// Each is ErrNotStrict naming where; an anyOf below the root is rewritten.
func TestStrictSchema_RefusesCompositionStrictModeDoesNotTake(t *testing.T) {
	t.Parallel()
	obj := func(extra string) string {
		return `{"type":"object","properties":{"a":{"type":"string"}` + extra + `},"required":["a"]}`
	}
	for name, c := range map[string]struct{ schema, where string }{
		"allOf":       {`{"allOf":[` + obj("") + `,` + obj("") + `]}`, "the schema's root uses allOf"},
		"oneOf":       {obj(`,"b":{"oneOf":[{"type":"string"},{"type":"integer"}]}`), "/properties/b uses oneOf"},
		"not":         {obj(`,"b":{"type":"string","not":{"const":"x"}}`), "/properties/b uses not"},
		"if":          {obj(`,"b":{"type":"object","properties":{"x":{"type":"string"}},"if":{"required":["x"]},"then":{}}`), "/properties/b uses if"},
		"prefixItems": {obj(`,"b":{"type":"array","prefixItems":[{"type":"string"}]}`), "/properties/b uses prefixItems"},
		"in $defs":    {`{"type":"object","properties":{},"$defs":{"D":{"allOf":[{"type":"string"}]}}}`, "/$defs/D uses allOf"},
		"root anyOf":  {`{"anyOf":[` + obj("") + `,{"type":"null"}]}`, "the schema's root is an anyOf"},
	} {
		_, _, err := tool.StrictSchema(json.RawMessage(c.schema))
		if !errors.Is(err, tool.ErrNotStrict) || !strings.Contains(err.Error(), c.where) {
			t.Errorf("%s: %v, want ErrNotStrict naming %q", name, err, c.where)
		}
	}
	sent, _, err := tool.StrictSchema(json.RawMessage(obj(`,"b":{"anyOf":[{"type":"string"},` + obj("") + `]}`)))
	if err != nil || !strings.Contains(string(sent), `"anyOf":[{"type":"string"},{"additionalProperties":false`) {
		t.Errorf("anyOf below the root: %s %v", sent, err)
	}
}

// TestStrictSchema_RefusesDraftSevenTupleItems: a draft 7 tuple (items as a
// list of schemas) was sent as strict unchanged, the objects in it not
// made strict (a provider refuses the request: items must be one schema
// there); prefixItems, its 2020-12 form, is refused already. It is
// ErrNotStrict naming where.
func TestStrictSchema_RefusesDraftSevenTupleItems(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ schema, where string }{
		"items list": {`{"type":"object","properties":{"t":{"type":"array","items":[{"type":"object","properties":{"a":{"type":"string"}}}]}},"required":["t"]}`,
			"/properties/t uses items as a list"},
		"in $defs": {`{"type":"object","properties":{},"$defs":{"T":{"type":"array","items":[{"type":"string"}],"additionalItems":false}}}`,
			"/$defs/T uses items as a list"},
	} {
		sent, _, err := tool.StrictSchema(json.RawMessage(c.schema))
		if !errors.Is(err, tool.ErrNotStrict) || !strings.Contains(err.Error(), c.where) {
			t.Errorf("%s: sent %s, %v; want ErrNotStrict naming %q", name, sent, err, c.where)
		}
	}
}
