package lossless

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// errNotObject is the error of Member and SetMembers for data that is not
// a JSON object.
var errNotObject = errors.New("lossless: not a JSON object")

// Field is one member of a JSON object: its name and raw JSON value.
type Field struct {
	Name  string
	Value json.RawMessage
}

// object returns data trimmed when it is a valid JSON object; empty data
// and null are the empty object.
func object(data []byte) ([]byte, error) {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return []byte("{}"), nil
	}
	if t[0] != '{' || !json.Valid(t) {
		return nil, errNotObject
	}
	return t, nil
}

// Member returns the raw value of the member name of the JSON object data
// (the last one, when repeated, as encoding/json reads it); ok is false
// when there is none. Empty data and null are the empty object.
func Member(data []byte, name string) (value json.RawMessage, ok bool, err error) {
	t, err := object(data)
	if err != nil {
		return nil, false, err
	}
	for key, raw := range members(t) {
		if memberName(key) == name {
			value, ok = raw, true
		}
	}
	return value, ok, nil
}

// SetMembers returns the JSON object data with set's members in it: each
// replaces the members of its name (in the place of the first), or is
// added after the others. The other members are kept as written, in their
// order, so that what the caller does not model is not changed (numbers
// keep their digits). Empty data and null are the empty object; other data
// that is not a JSON object is an error, as is a name that is not UTF-8.
// Values must be valid JSON.
func SetMembers(data []byte, set ...Field) ([]byte, error) {
	for _, f := range set {
		if !utf8.ValidString(f.Name) {
			return nil, fmt.Errorf("lossless: member name %q is not UTF-8", f.Name)
		}
	}
	t, err := object(data)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(t)+64)
	out = append(out, '{')
	done := make([]bool, len(set))
	first := true
	sep := func() {
		if !first {
			out = append(out, ',')
		}
		first = false
	}
	for key, raw := range members(t) {
		name := memberName(key)
		i := -1
		for j := range set {
			if set[j].Name == name {
				i = j
			}
		}
		switch {
		case i < 0:
			sep()
			out = append(append(append(append(out, '"'), key...), '"', ':'), raw...)
		case !done[i]:
			done[i] = true
			sep()
			out = append(append(append(append(out, '"'), key...), '"', ':'), set[i].Value...)
		}
	}
	for i, f := range set {
		if done[i] {
			continue
		}
		sep()
		k, _ := json.Marshal(f.Name)
		out = append(append(append(out, k...), ':'), f.Value...)
	}
	return append(out, '}'), nil
}
