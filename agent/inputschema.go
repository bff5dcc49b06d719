package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentryhq/agentry/run"
	"github.com/google/jsonschema-go/jsonschema"
)

// inputSchema validates structured input (Config.InputSchema).
type inputSchema struct {
	resolved *jsonschema.Resolved
}

func compileInputSchema(raw json.RawMessage) (*inputSchema, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("agent: InputSchema is not a JSON Schema: %w", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("agent: InputSchema: %w", err)
	}
	return &inputSchema{resolved: rs}, nil
}

// validate decodes a text input as JSON (structured input passes as is),
// validates it, and leaves the decoded value as the input content. A failure
// is an *InputCheckError with trigger validation_failed.
func (s *inputSchema) validate(in *run.Input) error {
	v := in.InputContent
	if text, ok := v.(string); ok {
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		var decoded any
		if err := dec.Decode(&decoded); err != nil || dec.More() {
			return &InputCheckError{Message: "input does not match the input schema: it is not a JSON value", Trigger: TriggerValidationFailed}
		}
		v = decoded
	}
	// Validate a JSON round trip: the validator wants plain JSON types.
	b, err := json.Marshal(v)
	if err != nil {
		return &InputCheckError{Message: "input does not match the input schema: " + err.Error(), Trigger: TriggerValidationFailed}
	}
	var plain any
	if err := json.Unmarshal(b, &plain); err != nil {
		return &InputCheckError{Message: "input does not match the input schema: " + err.Error(), Trigger: TriggerValidationFailed}
	}
	if err := s.resolved.Validate(plain); err != nil {
		return &InputCheckError{Message: "input does not match the input schema: " + err.Error(), Trigger: TriggerValidationFailed}
	}
	in.InputContent = plain
	return nil
}
