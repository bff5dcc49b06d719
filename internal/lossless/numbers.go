package lossless

import (
	"bytes"
	"encoding/json"
	"errors"
)

// UnmarshalNumbers is json.Unmarshal with numbers kept as written
// (json.Number) in the interface values it fills: an integer beyond
// float64's precision that Python stored survives a read and a write back,
// and two such integers never compare equal by rounding. Data after the
// value is an error.
func UnmarshalNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	// dec.More is no test here: it reports false before a ']' or '}', so
	// {"a":1}] would pass.
	if len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) > 0 {
		return errors.New("lossless: data after the JSON value")
	}
	return nil
}
