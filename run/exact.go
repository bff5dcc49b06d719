package run

import (
	"encoding/json"
	"reflect"

	"github.com/agentryhq/agentry/internal/lossless"
)

// Run data decoded into interface values (a step's user_input, its output's
// content, a field's value) holds numbers as encoding/json reads them,
// float64, which rounds an integer beyond 2^53 (a 64-bit id a user typed or
// Python stored). lossless.Unmarshal keeps the stored form of such a member
// in Extra, so that writing the value back unchanged writes it as stored;
// exactMember gives the field that stored form's exact value, and
// storedMember writes the stored form back while the field still holds it.

// exactMember sets *field to the stored member name of extra, kept there
// because reading it rounded a number, decoded with its numbers exact
// (lossless.UnmarshalExact: json.Number where float64 cannot hold the
// number, float64 otherwise). A member of another JSON type than T leaves
// *field as decoded.
func exactMember[T any](extra map[string]json.RawMessage, name string, field *T) {
	raw, ok := extra[name]
	if !ok {
		return
	}
	var x any
	if lossless.UnmarshalExact(raw, &x) != nil {
		return
	}
	if v, ok := x.(T); ok {
		*field = v
	}
}

// storedMember prepares *field, a copy's, for lossless.Marshal: while it
// still holds what exactMember read from the stored member, it is set to
// what encoding/json reads from it, which lossless.Marshal recognises as
// unchanged and writes in its stored form (a float such as 2.0 that Go
// would write as 2 included).
func storedMember[T any](extra map[string]json.RawMessage, name string, field *T) {
	raw, ok := extra[name]
	if !ok {
		return
	}
	var x any
	if lossless.UnmarshalExact(raw, &x) != nil || !reflect.DeepEqual(x, any(*field)) {
		return
	}
	var plain T
	if json.Unmarshal(raw, &plain) == nil {
		*field = plain
	}
}
