package wirecheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/run"
)

// ErrMistyped is matched by the errors of the Mistyped checks.
var ErrMistyped = errors.New("mistyped member")

// MistypedError names a member whose value its field cannot hold; its text
// is what the client reads.
type MistypedError struct {
	// Path is the member's path from the field the client sent
	// ("requirements[0].tool_execution.confirmed").
	Path string
	// Want names the JSON the field holds ("a boolean (true or false)").
	Want string
	// Got is the value as sent, clipped.
	Got string
}

func (e *MistypedError) Error() string { return e.Path + ": want " + e.Want + ", got " + e.Got }

// Is matches ErrMistyped.
func (e *MistypedError) Is(target error) bool { return target == ErrMistyped }

// The answers a client hands back to continue a paused run (an agent's or
// team's tools and requirements, a workflow's step requirements) decode
// losslessly: a member whose value its field cannot hold ("confirmed":"yes")
// is set aside with the unknown members, and the run would go on as if that
// answer had not been given. These checks refuse such a member by its path;
// members the types do not model pass, whatever their type.

// MistypedTools checks tool executions sent as answers (path names the
// list, "tools").
func MistypedTools(path string, ts []run.ToolExecution) error {
	for i := range ts {
		if err := mistyped[run.ToolExecution](fmt.Sprintf("%s[%d]", path, i), ts[i].Extra); err != nil {
			return err
		}
	}
	return nil
}

// MistypedRequirements checks requirements sent as answers, and their tool
// executions.
func MistypedRequirements(path string, rs []run.Requirement) error {
	for i := range rs {
		p := fmt.Sprintf("%s[%d]", path, i)
		if err := mistyped[run.Requirement](p, rs[i].Extra); err != nil {
			return err
		}
		if te := rs[i].ToolExecution; te != nil {
			if err := mistyped[run.ToolExecution](p+".tool_execution", te.Extra); err != nil {
				return err
			}
		}
	}
	return nil
}

// MistypedStepRequirements checks a workflow's step requirements sent as
// answers, and the executor requirements inside them.
func MistypedStepRequirements(path string, rs []run.StepRequirement) error {
	for i := range rs {
		p := fmt.Sprintf("%s[%d]", path, i)
		if err := mistyped[run.StepRequirement](p, rs[i].Extra); err != nil {
			return err
		}
		if err := MistypedRequirements(p+".executor_requirements", rs[i].ExecutorRequirements); err != nil {
			return err
		}
	}
	return nil
}

// mistyped returns the first member of extra (what a lossless decoding of
// a T set aside), in name order, that T models but whose value its field
// cannot hold. A member set aside because it was empty or null (its field
// omits it) decodes, and passes.
func mistyped[T any](path string, extra map[string]json.RawMessage) error {
	if len(extra) == 0 {
		return nil
	}
	known := membersOf(reflect.TypeFor[T]())
	names := make([]string, 0, len(extra))
	for name := range extra {
		if _, ok := known[name]; ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		t, raw := known[name], extra[name]
		if json.Unmarshal(raw, reflect.New(t).Interface()) != nil {
			return &MistypedError{Path: path + "." + name, Want: kindOf(t), Got: clip.Mark(string(raw), 40, "…")}
		}
	}
	return nil
}

// memberTypes caches membersOf by struct type.
var memberTypes sync.Map // reflect.Type → map[string]reflect.Type

// membersOf maps a struct's JSON member names to their field types.
func membersOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := memberTypes.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "-" && name != "" {
			m[name] = f.Type
		}
	}
	memberTypes.Store(t, m)
	return m
}

// kindOf names the JSON a field of type t holds.
func kindOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16,
		reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}
