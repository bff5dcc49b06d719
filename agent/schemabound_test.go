package agent

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/internal/schemabound"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// branching applies two subschemas at each level of nested arrays, both
// descending into the elements: a value nested n deep is validated 2^n
// times over by a validator that does not memoize.
const branching = `{"$defs":{"a":{"anyOf":[{"type":"number"},{"type":"array","items":{"$ref":"#/$defs/a"},"maxItems":0},` +
	`{"type":"array","items":{"$ref":"#/$defs/a"}}]}},"$ref":"#/$defs/a"}`

func nestedArrays(depth int) string {
	return strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
}

// TestSchemas_ValidationsThatCannotEndAreRefused: an output or input schema
// whose $ref leads back to itself on the same value made jsonschema-go
// recurse until the goroutine's stack overflowed, a fatal error killing
// the process (only the AgentOS run form checked output_schema before);
// New refuses both now, and a per-call schema fails its run.
func TestSchemas_ValidationsThatCannotEndAreRefused(t *testing.T) {
	t.Parallel()
	loop := json.RawMessage(`{"type":"object","not":{"$ref":"#"}}`)
	if _, err := New(Config{Model: scripted.Reply(`{}`), OutputSchema: loop}); !errors.Is(err, schemabound.ErrUnbounded) {
		t.Errorf("OutputSchema: %v, want ErrUnbounded", err)
	}
	if _, err := New(Config{Model: scripted.Reply(`{}`), InputSchema: loop}); !errors.Is(err, schemabound.ErrUnbounded) {
		t.Errorf("InputSchema: %v, want ErrUnbounded", err)
	}
	if _, err := New(Config{Model: scripted.Reply(`{}`), OutputSchema: json.RawMessage(`{"type":`)}); err == nil {
		t.Error("New accepted an output schema that is not JSON")
	}
	a := mustAgent(t, Config{Model: scripted.Reply(`{}`)})
	if _, err := a.Run(t.Context(), run.TextInput("x"), WithOutputSchema(loop, "")); !errors.Is(err, schemabound.ErrUnbounded) {
		t.Errorf("per-call schema: %v", err)
	}
}

// TestSchemas_ValuesThatMultiplyValidationAreRefused: a schema that is fine
// on its own validated an answer (or an input) nested 40 deep 2^40 times
// over, for ever and deaf to the run's cancellation; such a value is
// refused as not matching, and a shallow one still validates.
func TestSchemas_ValuesThatMultiplyValidationAreRefused(t *testing.T) {
	t.Parallel()
	out, err := mustAgent(t, Config{Model: scripted.Reply(nestedArrays(40)), OutputSchema: json.RawMessage(branching)}).
		Run(t.Context(), run.TextInput("x"))
	if !errors.Is(err, ErrOutputParse) || !errors.Is(err, schemabound.ErrTooCostly) || out.Status != run.StatusError {
		t.Errorf("deep answer: %v", err)
	}
	if out, err := mustAgent(t, Config{Model: scripted.Reply(nestedArrays(5)), OutputSchema: json.RawMessage(branching)}).
		Run(t.Context(), run.TextInput("x")); err != nil || out.Status != run.StatusCompleted {
		t.Errorf("shallow answer: %v", err)
	}

	a := mustAgent(t, Config{Model: scripted.Reply("ok"), InputSchema: json.RawMessage(branching)})
	_, err = a.Run(t.Context(), run.TextInput(nestedArrays(40)))
	var ice *InputCheckError
	if !errors.As(err, &ice) || ice.Trigger != TriggerValidationFailed || !strings.Contains(ice.Message, "too long") {
		t.Errorf("deep input: %v", err)
	}
	if _, err := a.Run(t.Context(), run.TextInput(nestedArrays(5))); err != nil {
		t.Errorf("shallow input: %v", err)
	}
}

// TestSchemas_BoundedAsJSONSchemaGoReadsThem: jsonschema-go matches
// keywords case-insensitively ({"$REF":"#"} is its $ref) and reads a
// $schema other than draft 7's two as 2020-12, where an $id beside a $ref
// sets the base; schemabound read the raw keys, so these schemas, which
// apply themselves to the same value, were accepted and their validation
// overflowed the stack.
func TestSchemas_BoundedAsJSONSchemaGoReadsThem(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		`{"$REF":"#"}`,
		`{"type":"object","ALLOF":[{"$ref":"#"}]}`,
		`{"$schema":"http://json-schema.org/draft-07/schema","$defs":{"a":{"$id":"http://x.example/a.json","$ref":"#/allOf/0",` +
			`"allOf":[{"$ref":"http://x.example/a.json"}]}},"$ref":"#/$defs/a"}`,
		// Only the root's $schema counts: the $id beside the $ref sets the base.
		`{"$defs":{"a":{"$schema":"http://json-schema.org/draft-07/schema#","$id":"http://x.example/a.json","$defs":{"c":` +
			`{"$id":"http://x.example/c.json","$ref":"#/allOf/0","allOf":[{"$ref":"http://x.example/c.json"}]}}}},"$ref":"http://x.example/c.json"}`,
	} {
		if _, err := New(Config{Model: scripted.Reply(`{}`), OutputSchema: json.RawMessage(s)}); !errors.Is(err, schemabound.ErrUnbounded) {
			t.Errorf("OutputSchema %s: %v, want ErrUnbounded", s, err)
		}
		if _, err := New(Config{Model: scripted.Reply(`{}`), InputSchema: json.RawMessage(s)}); !errors.Is(err, schemabound.ErrUnbounded) {
			t.Errorf("InputSchema %s: %v, want ErrUnbounded", s, err)
		}
	}
}
