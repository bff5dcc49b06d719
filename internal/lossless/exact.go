package lossless

import (
	"encoding/json"
	"strconv"
)

// UnmarshalExact is json.Unmarshal into interface values as encoding/json
// does it (numbers as float64), except that a number float64 cannot give
// back stays json.Number as written: an integer beyond 2^53 (a 64-bit id a
// Python program stored), more digits than a float keeps, or a magnitude
// beyond float64's range (which encoding/json refuses outright, losing the
// whole value). Writing the value back with encoding/json restores such a
// number unchanged; every other number is the float64 callers expect. Data
// after the value is an error.
func UnmarshalExact(data []byte, v *any) error {
	var x any
	if err := UnmarshalNumbers(data, &x); err != nil {
		return err
	}
	*v = exactValue(x)
	return nil
}

// UnmarshalExactObject is UnmarshalExact for a JSON object (or null, which
// gives a nil map); any other value is an error.
func UnmarshalExactObject(data []byte) (map[string]any, error) {
	var m map[string]any
	if err := UnmarshalNumbers(data, &m); err != nil {
		return nil, err
	}
	for k, x := range m {
		m[k] = exactValue(x)
	}
	return m, nil
}

// exactValue replaces, in place where it can, each json.Number of x that
// float64 gives back exactly by that float64.
func exactValue(x any) any {
	switch x := x.(type) {
	case json.Number:
		if inexact(string(x)) {
			return x
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return x
		}
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = exactValue(e)
		}
	case []any:
		for i, e := range x {
			x[i] = exactValue(e)
		}
	}
	return x
}
