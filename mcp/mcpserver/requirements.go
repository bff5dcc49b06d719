package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/internal/wirecheck"
	"github.com/agentryhq/agentry/run"
)

// requirementsField stands for continue_run's requirements in its typed
// input, and decodes nothing: the SDK decodes that input from a
// re-encoding of the arguments whose numbers went through float64 (an
// integer past 2^53 in tool_args or a user-input value, or any number in
// a member the server does not model, would change), so the requirements
// are decoded once, from the call's raw arguments (requirementsArg).
type requirementsField struct{}

// UnmarshalJSON ignores the value: requirementsArg reads it.
func (*requirementsField) UnmarshalJSON([]byte) error { return nil }

// lifecycleSchema is continue_run's input schema: requirements is an
// array of objects (or null), as the clients have always been told.
func lifecycleSchema() (*jsonschema.Schema, error) {
	reqs, err := jsonschema.For[[]map[string]any](nil)
	if err != nil {
		return nil, err
	}
	return jsonschema.For[lifecycleIn](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[requirementsField](): reqs,
	}})
}

// requirementsArg decodes continue_run's requirements from the call's raw
// arguments, as the client sent them (run.Requirement keeps the members it
// does not model). A member it models whose value has the wrong type
// ("confirmed":"yes") is refused, named by its path: the requirement's
// decoding keeps it aside as it would an unknown member, and the run would
// answer that the requirement was not resolved.
func requirementsArg(req *mcp.CallToolRequest) ([]run.Requirement, error) {
	var raw json.RawMessage
	if req != nil && req.Params != nil {
		raw = req.Params.Arguments
	}
	if len(raw) == 0 {
		return nil, nil
	}
	var in struct {
		Requirements []run.Requirement `json:"requirements"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, requirementsError(raw, err)
	}
	if err := wirecheck.MistypedRequirements("requirements", in.Requirements); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	return in.Requirements, nil
}

// requirementsError words the failure to decode the arguments' requirements,
// naming the first one that is not an object. The SDK refused arguments
// that are not JSON, or whose requirements are not an array of objects,
// before the handler runs: this is for a caller that did not go through it.
func requirementsError(raw json.RawMessage, err error) error {
	var items struct {
		Requirements []json.RawMessage `json:"requirements"`
	}
	if json.Unmarshal(raw, &items) == nil {
		for i, it := range items.Requirements {
			if kind := jsonKind(it); kind != "an object" && kind != "null" {
				return fmt.Errorf("%w: requirements[%d]: want an object (a requirement a run tool returned), got %s", ErrInvalidInput, i, kind)
			}
		}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field == "requirements" {
		return fmt.Errorf("%w: requirements: want an array of the requirements a run tool returned, got %s", ErrInvalidInput, te.Value)
	}
	return fmt.Errorf("%w: requirements: %v", ErrInvalidInput, err)
}

// jsonKind names the kind of the JSON value v.
func jsonKind(v json.RawMessage) string {
	s := strings.TrimLeft(string(v), " \t\r\n")
	if s == "" {
		return "nothing"
	}
	switch s[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
