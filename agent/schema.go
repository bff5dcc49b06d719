package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/agentryhq/agentry/internal/schemabound"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
	"github.com/google/jsonschema-go/jsonschema"
)

// ErrInvalidSchema is wrapped by the error of an output or input schema that
// cannot be used: not a JSON Schema, one whose validation would not end,
// or, with StrictOutput, one with no strict form.
var ErrInvalidSchema = errors.New("agent: invalid schema")

// ErrOutputParse is wrapped by the error of a run whose answer does not match
// its output schema.
var ErrOutputParse = errors.New("agent: structured output does not match the output schema")

// OutputSchemaFor returns the JSON Schema of T, for Config.OutputSchema: the
// properties encoding/json decodes into T (tool.SchemaFor), so an answer
// that matches the schema is one DecodeContent[T] fills.
func OutputSchemaFor[T any]() (json.RawMessage, error) {
	s, err := tool.SchemaFor(reflect.TypeFor[T]())
	if err != nil {
		return nil, fmt.Errorf("agent: output schema: %w", err)
	}
	return json.Marshal(s)
}

// DecodeContent decodes a structured run's content into T.
func DecodeContent[T any](content any) (T, error) {
	var v T
	b, err := json.Marshal(content)
	if err != nil {
		return v, err
	}
	err = json.Unmarshal(b, &v)
	return v, err
}

type compiledSchema struct {
	format *model.ResponseFormat
	boundedSchema
}

// runSchemaWhat names a run's own output schema in errors.
const runSchemaWhat = "the run's output schema (WithOutputSchema)"

// compileSchema compiles an output schema; what names it in errors
// ("OutputSchema"). Strict sends its strict form (Config.StrictOutput).
func compileSchema(raw json.RawMessage, name, what string, strict bool) (*compiledSchema, error) {
	if name == "" {
		name = "output"
	}
	bs, err := resolveSchema(raw, what)
	if err != nil {
		return nil, err
	}
	sent := raw
	if strict {
		var checked json.RawMessage
		if sent, checked, err = tool.StrictSchema(raw); err != nil {
			return nil, fmt.Errorf("%w: %s has no strict form (StrictOutput): %w", ErrInvalidSchema, what, err)
		}
		if bs, err = resolveSchema(checked, what); err != nil {
			return nil, err
		}
	}
	return &compiledSchema{format: &model.ResponseFormat{Name: name, Schema: sent, Strict: strict}, boundedSchema: bs}, nil
}

// boundedSchema is a resolved JSON Schema whose validation of a value is
// priced first (schemabound): jsonschema-go does not memoize, so a schema
// applying itself to the same value would overflow the stack (a fatal
// error, not a panic) and a value nested through a schema doubling at each
// level would validate for ever.
type boundedSchema struct {
	resolved *jsonschema.Resolved
	bound    *schemabound.Bound
}

// resolveSchema parses, resolves and bounds raw, refusing a keyword written
// in another case (checkKeywordCase); what names the schema in errors.
func resolveSchema(raw json.RawMessage, what string) (boundedSchema, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return boundedSchema{}, fmt.Errorf("%w: %s is not a JSON Schema: %w", ErrInvalidSchema, what, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return boundedSchema{}, fmt.Errorf("%w: %s: %w", ErrInvalidSchema, what, err)
	}
	b, err := schemabound.CheckParsed(&s)
	if err != nil {
		return boundedSchema{}, fmt.Errorf("%w: %s: %w", ErrInvalidSchema, what, err)
	}
	if err := checkKeywordCase(&s, ""); err != nil {
		return boundedSchema{}, fmt.Errorf("%w: %s: %w", ErrInvalidSchema, what, err)
	}
	return boundedSchema{resolved: rs, bound: b}, nil
}

// CheckSchema returns the error (wrapping ErrInvalidSchema) an agent would
// refuse raw with as an output or input schema: not a JSON Schema, one
// whose validation would not end, or one with a keyword in another case
// (checkKeywordCase); what names it in the error. For callers
// that check a schema before a run (AgentOS's run form, the YAML config).
func CheckSchema(raw json.RawMessage, what string) error {
	_, err := resolveSchema(raw, what)
	return err
}

// validate validates a decoded JSON value, refusing one whose validation
// would apply more than schemabound.DefaultCostLimit subschemas.
func (s boundedSchema) validate(v any) error {
	if err := s.bound.Cost(v, schemabound.DefaultCostLimit); err != nil {
		return err
	}
	return s.resolved.Validate(v)
}

// parse decodes the model's answer (tolerating a ```json fence) and validates it.
func (c *compiledSchema) parse(text string) (any, error) {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "```") {
		t = strings.TrimPrefix(t, "```json")
		t = strings.TrimPrefix(t, "```")
		t = strings.TrimSuffix(strings.TrimSpace(t), "```")
	}
	dec := json.NewDecoder(strings.NewReader(t))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: the answer is not JSON: %v", ErrOutputParse, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the JSON value", ErrOutputParse)
	}
	if err := c.validate(v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOutputParse, err)
	}
	return v, nil
}
