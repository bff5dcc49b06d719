package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentryhq/agentry/internal/schemabound"
	sj "github.com/santhosh-tekuri/jsonschema/v6"
)

// validator checks raw arguments against one tool's compiled parameter schema.
// It is immutable after construction and safe for concurrent use.
type validator struct {
	tool   string
	schema *sj.Schema // nil: any JSON object is accepted
	// bound prices a validation first: the validator does not memoize, so
	// arguments nested through a schema applying two branches at each
	// level would validate for ever (schemabound).
	bound *schemabound.Bound
	// fast answers "certainly valid" in one pass over the raw bytes for the
	// schemas it understands; nil when the schema needs the full validator.
	fast *fastSchema
}

// emptyArgs stands in for the empty argument string some models send for tools
// without parameters.
var emptyArgs = json.RawMessage(`{}`)

// newValidator compiles a tool's parameter schema. Remote and file references
// are refused: a schema must be self-contained.
func newValidator(tool string, params json.RawMessage) (*validator, error) {
	v := &validator{tool: tool, fast: compileFast(params)}
	if len(bytes.TrimSpace(params)) == 0 {
		return v, nil
	}
	doc, err := sj.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, fmt.Errorf("tool %s: parameters are not valid JSON: %w", tool, err)
	}
	if where, ok := convertible(doc); !ok {
		return nil, fmt.Errorf("tool %s: parameters schema: the number at %q has more than %d characters or an exponent beyond ±%d", tool, "#"+where, maxNumberLen, maxExponent)
	}
	c := sj.NewCompiler()
	c.UseLoader(sj.SchemeURLLoader{})
	const loc = "agentry-tool-parameters.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("tool %s: parameters schema: %w", tool, err)
	}
	v.schema, err = c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("tool %s: parameters are not a valid JSON Schema: %w", tool, err)
	}
	if v.bound, err = schemabound.Check(params); err != nil {
		return nil, fmt.Errorf("tool %s: parameters schema: %w", tool, err)
	}
	return v, nil
}

// check validates args and returns them normalised ("" becomes {}). Errors wrap
// ErrInvalidArguments and say what to change, for the model to retry.
func (v *validator) check(args json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = emptyArgs
	}
	if v.fast != nil && v.fast.accepts(args) {
		return args, nil
	}
	return v.checkFull(args)
}

// checkFull is check without the fast path: it decides every case and writes
// the messages.
func (v *validator) checkFull(args json.RawMessage) (json.RawMessage, error) {
	doc, err := decodeArgs(args)
	if err != nil {
		return nil, fmt.Errorf("%w for %s: not valid JSON (%v); send the arguments as one JSON object", ErrInvalidArguments, v.tool, err)
	}
	if v.schema == nil {
		if _, ok := doc.(map[string]any); !ok {
			return nil, fmt.Errorf("%w for %s: got %s, want a JSON object", ErrInvalidArguments, v.tool, jsonKind(doc))
		}
		return args, nil
	}
	if where, ok := convertible(doc); !ok {
		if where == "" {
			where = "the top level"
		}
		return nil, fmt.Errorf("%w for %s: at %s: a number with more than %d characters or an exponent beyond ±%d cannot be checked; send a shorter number, or a string",
			ErrInvalidArguments, v.tool, where, maxNumberLen, maxExponent)
	}
	if err := v.bound.Cost(doc, schemabound.DefaultCostLimit); err != nil {
		return nil, fmt.Errorf("%w for %s: %w; send simpler arguments", ErrInvalidArguments, v.tool, err)
	}
	if err := v.schema.Validate(doc); err != nil {
		return nil, fmt.Errorf("%w for %s: %s", ErrInvalidArguments, v.tool, describeViolations(err))
	}
	return args, nil
}

// Numbers the validator converts to a big.Rat (minimum, multipleOf,
// uniqueItems, const, …) are bounded: big.Rat refuses an exponent beyond
// about 10^7 (and the validator then dereferences nil: a panic), and takes
// time growing with the exponent and the digits.
const (
	maxNumberLen = 1000
	maxExponent  = 400
)

// convertible reports whether every number in v is within maxNumberLen and
// maxExponent; if not, where names the first that is not, as a JSON
// pointer (built only then: this runs on every fully checked tool call).
func convertible(v any) (where string, ok bool) {
	switch t := v.(type) {
	case json.Number:
		s := string(t)
		if len(s) > maxNumberLen {
			return "", false
		}
		if i := strings.IndexAny(s, "eE"); i >= 0 {
			exp, err := strconv.Atoi(s[i+1:])
			if err != nil || exp > maxExponent || exp < -maxExponent {
				return "", false
			}
		}
	case map[string]any:
		for k, c := range t {
			if where, ok := convertible(c); !ok {
				return schemabound.PointerJoin("", k) + where, false
			}
		}
	case []any:
		for i, c := range t {
			if where, ok := convertible(c); !ok {
				return "/" + strconv.Itoa(i) + where, false
			}
		}
	}
	return "", true
}

// decodeArgs parses exactly one JSON value; trailing data is an error.
func decodeArgs(args json.RawMessage) (any, error) {
	args = bytes.TrimSpace(args)
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if dec.InputOffset() != int64(len(args)) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return doc, nil
}

// describeViolations lists each failed keyword with the place in the arguments
// it concerns, e.g. `at /days: got string, want integer`.
func describeViolations(err error) string {
	var ve *sj.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	units := ve.BasicOutput().Errors
	msgs := make([]string, 0, len(units))
	for _, u := range units {
		if u.Error == nil {
			continue
		}
		where := u.InstanceLocation
		if where == "" {
			where = "the top level"
		}
		msgs = append(msgs, "at "+where+": "+u.Error.String())
	}
	if len(msgs) == 0 {
		return ve.Error()
	}
	return strings.Join(msgs, "; ")
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}
