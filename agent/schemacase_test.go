package agent

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// TestSchemas_KeywordsInAnotherCaseAreRefused: jsonschema-go decodes a
// schema with encoding/json, which matches member names
// case-insensitively, so {"type":"object","Type":"string"} validated
// answers as strings while the model was sent an object schema, and a
// StrictOutput agent's "AllOf" passed the strict check (which reads
// keywords as written) and was then applied. Such a member is refused,
// naming where; annotations and property names in any case are not.
func TestSchemas_KeywordsInAnotherCaseAreRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ schema, want string }{
		{`{"type":"object","Type":"string"}`, `the schema's root has the member "Type", which the validator would read as the keyword "type"`},
		{`{"type":"object","properties":{"a":{"type":"string","MaxLength":3}}}`, `/properties/a has the member "MaxLength"`},
		{`{"type":"array","items":{"type":"object","REQUIRED":["x"]}}`, `/items has the member "REQUIRED"`},
		{`{"$defs":{"a/b":{"type":"object","AdditionalProperties":false}},"$ref":"#/$defs/a~1b"}`, `/$defs/a~1b has the member "AdditionalProperties"`},
		{`{"anyOf":[{"type":"string"},{"type":"object","Properties":{"x":{"type":"string"}}}]}`, `/anyOf/1 has the member "Properties"`},
		{`{"type":"object","not":{"ENUM":[1]}}`, `/not has the member "ENUM"`},
		// encoding/json folds as strings.EqualFold does: ſ is an s.
		{`{"type":"object","$ſchema":"x"}`, `"$ſchema", which the validator would read as the keyword "$schema"`},
	} {
		_, err := New(Config{Model: scripted.Reply(`{}`), OutputSchema: json.RawMessage(c.schema)})
		if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OutputSchema %s: %v, want ErrInvalidSchema with %q", c.schema, err, c.want)
		}
		if _, err := New(Config{Model: scripted.Reply(`{}`), InputSchema: json.RawMessage(c.schema)}); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("InputSchema %s: %v, want ErrInvalidSchema", c.schema, err)
		}
		if err := CheckSchema(json.RawMessage(c.schema), "output_schema"); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("CheckSchema %s: %v", c.schema, err)
		}
	}
	strictAllOf := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}},"AllOf":[{"required":["a"]}]}`)
	if _, err := New(Config{Model: scripted.Reply(`{"a":"x"}`), OutputSchema: strictAllOf, StrictOutput: true}); !errors.Is(err, ErrInvalidSchema) ||
		!strings.Contains(err.Error(), `"AllOf"`) {
		t.Errorf("StrictOutput with AllOf: %v", err)
	}
	a := mustAgent(t, Config{Model: scripted.Reply(`{}`)})
	if _, err := a.Run(t.Context(), run.TextInput("x"), WithOutputSchema(json.RawMessage(`{"type":"object","Type":"string"}`), "")); !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("per-call schema: %v", err)
	}
	// Annotations in any case change no validation; property names are
	// names, not keywords.
	fine := `{"type":"object","Description":"d","TITLE":"t","properties":{"Type":{"type":"string"},"AllOf":{"type":"integer"}},` +
		`"required":["Type"],"x-Type":1}`
	a = mustAgent(t, Config{Model: scripted.Reply(`{"Type":"s","AllOf":2}`), OutputSchema: json.RawMessage(fine)})
	out, err := a.Run(t.Context(), run.TextInput("x"))
	if err != nil {
		t.Fatalf("a schema with annotations in another case and keyword-like property names: %v", err)
	}
	if m, _ := out.Content.(map[string]any); m["Type"] != "s" {
		t.Errorf("content = %#v", out.Content)
	}
}
