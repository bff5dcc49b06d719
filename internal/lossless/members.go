package lossless

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// errNotObject is ParseObject's error for data that is not a JSON object.
var errNotObject = errors.New("lossless: not a JSON object")

// Field is one member of a JSON object: its name and raw JSON value.
type Field struct {
	Name  string
	Value json.RawMessage
}

// Object is a JSON object checked once (ParseObject), whose members are
// read and replaced without decoding the others.
type Object struct{ data []byte }

// ParseObject checks that data is a JSON object; empty data and null are
// the empty object.
func ParseObject(data []byte) (Object, error) {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return Object{[]byte("{}")}, nil
	}
	if t[0] != '{' || !json.Valid(t) {
		return Object{}, errNotObject
	}
	return Object{t}, nil
}

// MemberReader reads the members of a JSON object the caller has checked is
// valid (json.Valid, or part of a value that is), in order, without
// allocating: Next gives each key as stored (quotes stripped, escapes
// kept) and its raw value; a repeated key is given again. Invalid data
// gives unspecified members, never a panic.
type MemberReader struct {
	data []byte
	i    int
}

// ReadMembers returns a reader of the members of the valid JSON object data.
func ReadMembers(data []byte) MemberReader {
	data = bytes.TrimLeft(data, " \t\r\n")
	return MemberReader{data, skipSpace(data, 1)} // past '{'
}

// Next returns the next member; ok is false after the last.
func (r *MemberReader) Next() (key, value []byte, ok bool) {
	d, i := r.data, r.i
	if i >= len(d) || d[i] != '"' {
		return nil, nil, false
	}
	end := skipString(d, i)
	if end-1 <= i || d[end-1] != '"' {
		return nil, nil, false // invalid data: no answer, and no panic
	}
	key = d[i+1 : end-1]
	i = skipSpace(d, end)
	if i >= len(d) || d[i] != ':' {
		return nil, nil, false
	}
	i = skipSpace(d, i+1)
	vend := skipValue(d, i)
	value = d[i:vend]
	i = skipSpace(d, vend)
	if i < len(d) && d[i] == ',' {
		i = skipSpace(d, i+1)
	}
	r.i = i
	return key, value, true
}

// ElementReader reads the elements of a JSON array the caller has checked
// is valid, in order, without allocating. Invalid data gives unspecified
// elements, never a panic.
type ElementReader struct {
	data []byte
	i    int
}

// ReadElements returns a reader of the elements of the valid JSON array data.
func ReadElements(data []byte) ElementReader {
	data = bytes.TrimLeft(data, " \t\r\n")
	return ElementReader{data, skipSpace(data, 1)} // past '['
}

// Next returns the next element; ok is false after the last.
func (r *ElementReader) Next() (value []byte, ok bool) {
	d, i := r.data, r.i
	if i >= len(d) || d[i] == ']' {
		return nil, false
	}
	end := skipValue(d, i)
	if end == i {
		return nil, false // invalid data (no value here): no answer, and no endless loop
	}
	value = d[i:end]
	i = skipSpace(d, end)
	if i < len(d) && d[i] == ',' {
		i = skipSpace(d, i+1)
	}
	r.i = i
	return value, true
}

// Member returns the raw value of the member name (the last one, when
// repeated, as encoding/json reads it); ok is false when there is none.
func (o Object) Member(name string) (value json.RawMessage, ok bool) {
	for key, raw := range members(o.data) {
		if KeyIs(key, name) {
			value, ok = raw, true
		}
	}
	return value, ok
}

// With returns the object with set's members in it: each replaces the
// members of its name (in the place of the first), or is added after the
// others. The other members are kept as written, in their order, so that
// what the caller does not model is not changed (numbers keep their
// digits). A name that is not UTF-8 is an error. Values must be valid JSON.
func (o Object) With(set ...Field) ([]byte, error) {
	for _, f := range set {
		if !utf8.ValidString(f.Name) {
			return nil, fmt.Errorf("lossless: member name %q is not UTF-8", f.Name)
		}
	}
	if o.data == nil {
		o.data = []byte("{}") // the zero Object is the empty object
	}
	out := make([]byte, 0, len(o.data)+64)
	out = append(out, '{')
	done := make([]bool, len(set))
	first := true
	sep := func() {
		if !first {
			out = append(out, ',')
		}
		first = false
	}
	for key, raw := range members(o.data) {
		i := -1
		for j := range set {
			if KeyIs(key, set[j].Name) {
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
		k, err := Encode(f.Name)
		if err != nil {
			return nil, err
		}
		out = append(append(append(out, k...), ':'), f.Value...)
	}
	return append(out, '}'), nil
}
