package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// FuncConfig describes a function tool. Name and Description are required; zero
// values of the other fields mean no timeout and no human-in-the-loop pause.
type FuncConfig struct {
	// Name is what the model calls: letters, digits, '_' and '-', at most 64.
	Name        string
	Description string
	// Strict asks providers that support it to enforce the schema (OpenAI's
	// strict function calling). The schema sent is then in the form they
	// require: every property required, optional ones taking null as well
	// (decoded as the field's zero value), no other properties. A type with
	// a map or a field of any JSON value has no such form: Func refuses it.
	Strict bool
	// Timeout bounds one call; zero means no per-tool limit (see
	// Definition.Timeout for where each kind of call runs).
	Timeout time.Duration
	// Human-in-the-loop flags, copied to the Definition.
	RequiresConfirmation bool
	RequiresUserInput    bool
	ExternalExecution    bool
	StopAfterCall        bool
	// NonIdempotent is copied to the Definition.
	NonIdempotent bool
	// HonorsCancel, copied to the Definition.
	HonorsCancel bool
}

// validName accepts what every provider accepts: ^[a-zA-Z0-9_-]{1,64}$.
func validName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Func builds a Tool from a typed Go function. The parameter schema is inferred
// once from In (a struct, or a map with string or integer keys) as
// github.com/google/jsonschema-go infers it, with the properties
// encoding/json decodes (embedded structs, json names and clashing names by
// its rules; a type decoded from text, such as uuid.UUID, is a string and a
// json.RawMessage any value): `json` tags name properties, fields without
// omitempty/omitzero are required, unknown properties are rejected, a
// `jsonschema:"..."` tag is the property's description and an `enum:"a,b,c"`
// tag restricts a string, number or boolean field (or the items of a slice
// field) to the listed values.
//
// Each call's arguments are validated against the schema, then decoded into In.
// The result is given to the model as is when Out is a string or
// json.RawMessage, and JSON-encoded otherwise.
func Func[In, Out any](cfg FuncConfig, fn func(ctx context.Context, in In) (Out, error)) (Tool, error) {
	if !validName(cfg.Name) {
		return nil, fmt.Errorf("tool: invalid name %q: use 1 to 64 letters, digits, '_' or '-'", cfg.Name)
	}
	if cfg.Description == "" {
		return nil, fmt.Errorf("tool %s: a description is required (the model reads it to choose the tool)", cfg.Name)
	}
	if fn == nil {
		return nil, fmt.Errorf("tool %s: nil function", cfg.Name)
	}
	c := parametersFor(reflect.TypeFor[In]())
	if c.err != nil {
		return nil, fmt.Errorf("tool %s: %w", cfg.Name, c.err)
	}
	params, dec := c.params, c.dec
	v := &validator{tool: cfg.Name, schema: c.check.schema, bound: c.check.bound, fast: c.check.fast}
	if cfg.Strict {
		sent, checked, err := StrictSchema(params)
		if err != nil {
			return nil, fmt.Errorf("tool %s: Strict: %w", cfg.Name, err)
		}
		if v, err = newValidator(cfg.Name, checked); err != nil {
			return nil, err
		}
		// Optional properties may be null: the full validator and
		// encoding/json decide.
		params, v.fast, dec = sent, nil, nil
	}
	return &funcTool[In, Out]{
		dec: dec,
		def: Definition{
			Name:                 cfg.Name,
			Description:          cfg.Description,
			Parameters:           bytes.Clone(params), // the cached copy stays pristine
			Strict:               cfg.Strict,
			Timeout:              cfg.Timeout,
			RequiresConfirmation: cfg.RequiresConfirmation,
			RequiresUserInput:    cfg.RequiresUserInput,
			ExternalExecution:    cfg.ExternalExecution,
			StopAfterCall:        cfg.StopAfterCall,
			NonIdempotent:        cfg.NonIdempotent,
			HonorsCancel:         cfg.HonorsCancel,
		},
		validator: v,
		fn:        fn,
	}, nil
}

// MustFunc is Func for package-level tool declarations; it panics on error.
func MustFunc[In, Out any](cfg FuncConfig, fn func(ctx context.Context, in In) (Out, error)) Tool {
	t, err := Func(cfg, fn)
	if err != nil {
		panic(err)
	}
	return t
}

type funcTool[In, Out any] struct {
	def       Definition
	validator *validator
	// dec decodes arguments the fast check accepted; nil: encoding/json.
	dec *argDecoder
	fn  func(context.Context, In) (Out, error)
}

func (t *funcTool[In, Out]) Definition() Definition { return t.def }

// argValidator lets a Set reuse the validator compiled at construction.
func (t *funcTool[In, Out]) argValidator() *validator { return t.validator }

func (t *funcTool[In, Out]) usesValidator(v *validator) bool { return v == t.validator }

// Call validates and decodes the arguments, then runs the function.
func (t *funcTool[In, Out]) Call(ctx context.Context, args json.RawMessage) (string, error) {
	args, err := t.validator.check(args)
	if err != nil {
		return "", err
	}
	return t.call(ctx, args)
}

// call runs the function on arguments that already passed validation.
func (t *funcTool[In, Out]) call(ctx context.Context, args json.RawMessage) (string, error) {
	in, err := t.decode(args)
	if err != nil {
		return "", err
	}
	return t.run(ctx, in)
}

// execute is a Set's call of the tool (see directTool): the arguments are
// checked and decoded on the caller's goroutine, straight from the model's
// text when the fast paths allow, then the function runs (inline unless the
// tool has a timeout).
func (t *funcTool[In, Out]) execute(ctx context.Context, args string) (string, error) {
	in, err := t.parse(args)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("tool %s not run: %w", t.def.Name, context.Cause(ctx))
	}
	if t.def.Timeout <= 0 {
		return callInline(ctx, t.def.Name, func(ctx context.Context) (string, error) { return t.run(ctx, in) })
	}
	return t.onWorker(ctx, in)
}

// onWorker runs the function under the tool's timeout (its own function, so
// that only this path moves the arguments to the heap).
func (t *funcTool[In, Out]) onWorker(ctx context.Context, in In) (string, error) {
	return invoke(ctx, t.def, func(ctx context.Context) (string, error) { return t.run(ctx, in) })
}

// parse validates the arguments and decodes them. The common case reads the
// model's text in place: the fast check accepts it and argDecoder decodes it
// without copies. Anything else takes the full validator and encoding/json,
// which decide acceptance and write the messages.
func (t *funcTool[In, Out]) parse(args string) (In, error) {
	var in In
	if v := t.validator; v.fast != nil && strings.TrimSpace(args) != "" {
		// The text is only read, never kept as bytes.
		raw := unsafe.Slice(unsafe.StringData(args), len(args))
		if v.fast.accepts(raw) {
			if t.dec != nil && t.dec.decode(unsafe.Pointer(&in), args) {
				return in, nil
			}
			return t.decode(json.RawMessage(args))
		}
	}
	checked, err := t.validator.check(json.RawMessage(args))
	if err != nil {
		return in, err
	}
	return t.decode(checked)
}

// decode reads arguments with encoding/json. It runs the argument types'
// own UnmarshalJSON and UnmarshalText, so a panic in them is recovered as a
// PanicError, as one in the tool's function is.
func (t *funcTool[In, Out]) decode(args json.RawMessage) (in In, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Tool: t.def.Name, Value: r, Stack: debug.Stack()}
		}
	}()
	if err := json.Unmarshal(args, &in); err != nil {
		// The schema cannot express every Go limit (e.g. int64 range).
		return in, fmt.Errorf("%w for %s: %v", ErrInvalidArguments, t.def.Name, err)
	}
	return in, nil
}

func (t *funcTool[In, Out]) run(ctx context.Context, in In) (string, error) {
	out, err := t.fn(ctx, in)
	if err != nil {
		return "", err
	}
	switch o := any(out).(type) {
	case string:
		return o, nil
	case json.RawMessage:
		return string(o), nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("tool %s: encoding result: %w", t.def.Name, err)
	}
	return string(b), nil
}

// inferred caches the schema of each argument type: inference and compilation
// cost far more than a tool call, and the set of types is fixed by the program.
var inferred sync.Map // reflect.Type -> inferredSchema

type inferredSchema struct {
	params json.RawMessage
	// check is the compiled schema (its tool name unset).
	check *validator
	dec   *argDecoder
	err   error
}

// parametersFor returns the JSON Schema of t and its compiled forms. The
// returned values are shared: callers must not modify them.
func parametersFor(t reflect.Type) inferredSchema {
	if c, ok := inferred.Load(t); ok {
		return c.(inferredSchema)
	}
	var c inferredSchema
	c.params, c.err = inferParameters(t)
	if c.err == nil {
		if c.check, c.err = newValidator(t.String(), c.params); c.err == nil {
			if c.check.fast != nil {
				c.dec = newArgDecoder(t)
			}
		}
	}
	inferred.Store(t, c)
	return c
}

// inferParameters computes the JSON Schema of a tool's argument type.
func inferParameters(t reflect.Type) (json.RawMessage, error) {
	s, err := SchemaFor(t)
	if err != nil {
		return nil, fmt.Errorf("cannot infer a JSON schema for %s: %w", t, err)
	}
	// A pointer argument type still needs an object from the model.
	if s.Type == "" && len(s.Types) == 2 && s.Types[0] == "null" && s.Types[1] == "object" {
		s.Type, s.Types = "object", nil
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("arguments type %s must be a struct or a map with string keys (tool arguments are a JSON object)", t)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding the schema of %s: %w", t, err)
	}
	return b, nil
}
