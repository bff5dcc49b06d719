package mcpserver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/internal/wirecheck"
)

// idArguments are the built-in tools' arguments naming a stored object.
var idArguments = []string{"session_id", "run_id", "user_id", "agent_id", "team_id", "workflow_id", "component_id", "db_id"}

// argumentCheck refuses what the HTTP routes refuse before any work, with
// the same checks (wirecheck): a NUL anywhere in the arguments (Postgres
// stores none in text or jsonb, so a run would execute and then fail to be
// saved) and an id longer than wirecheck.MaxIDBytes or holding a control
// character.
//
// It reads the input the SDK decoded (its id fields, found once per input
// type) and scans the raw text for NUL escapes, so the arguments are not
// decoded a second time. The SDK has refused arguments that are not JSON,
// or that its schema refuses (an unknown member, an id that is not a
// string), before the handler runs.
type argumentCheck[In any] struct {
	ids []idField // in idArguments order: the first refused is reported
}

// idField is an id argument's string field in an input struct.
type idField struct {
	name  string
	index []int
}

func newArgumentCheck[In any]() argumentCheck[In] {
	var c argumentCheck[In]
	c.ids = idFields(reflect.TypeFor[In](), nil)
	slices.SortStableFunc(c.ids, func(a, b idField) int {
		return slices.Index(idArguments, a.name) - slices.Index(idArguments, b.name)
	})
	return c
}

// idFields lists t's string fields (those of embedded structs included)
// named, in JSON, as one of idArguments.
func idFields(t reflect.Type, index []int) []idField {
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []idField
	for i := range t.NumField() {
		f := t.Field(i)
		at := append(slices.Clone(index), i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, idFields(f.Type, at)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && f.Type.Kind() == reflect.String && slices.Contains(idArguments, name) {
			out = append(out, idField{name: name, index: at})
		}
	}
	return out
}

// check checks a call's raw arguments and the input decoded from them.
func (c argumentCheck[In]) check(raw json.RawMessage, in *In) error {
	if wirecheck.EscapesNUL(raw) {
		return fmt.Errorf("%w: arguments must not contain NUL characters", ErrInvalidInput)
	}
	v := reflect.ValueOf(in).Elem()
	for _, f := range c.ids {
		if err := wirecheck.CheckID(f.name, v.FieldByIndex(f.index).String()); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidInput, err)
		}
	}
	return nil
}

// checkMessage refuses a run without a message, as the run routes do.
func checkMessage(msg string) error {
	if strings.TrimSpace(msg) == "" {
		return fmt.Errorf("%w: message is required", ErrInvalidInput)
	}
	return nil
}
