package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
	"github.com/google/jsonschema-go/jsonschema"
)

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
	format   *model.ResponseFormat
	resolved *jsonschema.Resolved
}

func compileSchema(raw json.RawMessage, name string) (*compiledSchema, error) {
	if name == "" {
		name = "output"
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("agent: output schema is not a JSON Schema: %w", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("agent: output schema: %w", err)
	}
	return &compiledSchema{format: &model.ResponseFormat{Name: name, Schema: raw}, resolved: rs}, nil
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
	if err := c.resolved.Validate(v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOutputParse, err)
	}
	return v, nil
}
