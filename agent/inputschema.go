package agent

import (
	"encoding/json"
	"strings"

	"github.com/agentryhq/agentry/run"
)

// inputSchema validates structured input (Config.InputSchema).
type inputSchema struct {
	boundedSchema
}

func compileInputSchema(raw json.RawMessage) (*inputSchema, error) {
	bs, err := resolveSchema(raw, "InputSchema")
	if err != nil {
		return nil, err
	}
	return &inputSchema{bs}, nil
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
	if err := s.boundedSchema.validate(plain); err != nil {
		return &InputCheckError{Message: "input does not match the input schema: " + err.Error(), Trigger: TriggerValidationFailed}
	}
	in.InputContent = plain
	return nil
}
