// Package jsontest compares JSON documents by meaning for tests: object member
// order, whitespace, escapes and number spelling (1 vs 1.0) do not matter;
// numbers are compared exactly, not as float64. DiffPython also tells ints
// from floats (1 vs 1.0), as Python's json module (Agno's reader) does.
package jsontest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// Diff returns "" when want and got are the same JSON value, else the path
// of the first difference and both values there.
func Diff(want, got []byte) string { return diffWith(want, got, func(v any) any { return v }) }

// DiffPython is Diff with one more difference, one Python's json module,
// which reads the rows Agno shares with Agentry, sees: an integer and a
// float (1 vs 1.0, 1e+16 vs 10000000000000000 are an int and a float in
// Python). A lone surrogate escape ("\udcff") reads as U+FFFD, as in Diff.
func DiffPython(want, got []byte) string { return diffWith(want, got, typed) }

// diffWith decodes both documents, maps each decoded value through view,
// and diffs the results.
func diffWith(want, got []byte, view func(any) any) string {
	w, err := decode(want)
	if err != nil {
		return fmt.Sprintf("want is not JSON: %v", err)
	}
	g, err := decode(got)
	if err != nil {
		return fmt.Sprintf("got is not JSON: %v", err)
	}
	return diff("$", view(w), view(g), false)
}

// float is a number written as a float (with a fraction or an exponent),
// which Python reads as a float.
type float json.Number

// typed returns v with its numbers written as floats as float values.
func typed(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = typed(e)
		}
	case []any:
		for i, e := range v {
			v[i] = typed(e)
		}
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return float(v)
		}
	}
	return v
}

// MissingFrom returns "" when every member of want (at every depth of
// objects; arrays element by element) is in got with the same value, else the
// first one that is not. got may have more members.
func MissingFrom(want, got []byte) string {
	w, err := decode(want)
	if err != nil {
		return fmt.Sprintf("want is not JSON: %v", err)
	}
	g, err := decode(got)
	if err != nil {
		return fmt.Sprintf("got is not JSON: %v", err)
	}
	return diff("$", w, g, true)
}

func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func diff(path string, w, g any, subset bool) string {
	switch w := w.(type) {
	case map[string]any:
		gm, ok := g.(map[string]any)
		if !ok {
			return mismatch(path, w, g)
		}
		keys := make([]string, 0, len(w)+len(gm))
		for k := range w {
			keys = append(keys, k)
		}
		if !subset {
			for k := range gm {
				if _, ok := w[k]; !ok {
					keys = append(keys, k)
				}
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			wv, wok := w[k]
			gv, gok := gm[k]
			switch {
			case !gok:
				return fmt.Sprintf("%s.%s: missing (want %s)", path, k, show(wv))
			case !wok:
				return fmt.Sprintf("%s.%s: unexpected %s", path, k, show(gv))
			}
			if d := diff(path+"."+k, wv, gv, subset); d != "" {
				return d
			}
		}
		return ""
	case []any:
		ga, ok := g.([]any)
		if !ok || len(ga) != len(w) {
			return mismatch(path, w, g)
		}
		for i := range w {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), w[i], ga[i], subset); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		gn, ok := g.(json.Number)
		if !ok {
			return mismatch(path, w, g)
		}
		if !sameNumber(string(w), string(gn)) {
			return mismatch(path, w, g)
		}
		return ""
	case float:
		gn, ok := g.(float)
		if !ok {
			return fmt.Sprintf("%s: want the float %s, got %s", path, string(w), show(g))
		}
		if !sameNumber(string(w), string(gn)) {
			return mismatch(path, w, g)
		}
		return ""
	default: // string, bool, nil
		if _, ok := g.(float); ok {
			return fmt.Sprintf("%s: want %s, got the float %s", path, show(w), string(g.(float)))
		}
		if w != g {
			return mismatch(path, w, g)
		}
		return ""
	}
}

// sameNumber compares decimal numbers at 512 bits of precision (far beyond
// float64, so 1 and 1.0 are equal and 0.1 and 0.10000000000000001 are not).
// big.Rat would be exact but takes forever on exponents like 1e999999999.
func sameNumber(a, b string) bool {
	if a == b {
		return true
	}
	x, _, err1 := big.ParseFloat(a, 10, 512, big.ToNearestEven)
	y, _, err2 := big.ParseFloat(b, 10, 512, big.ToNearestEven)
	return err1 == nil && err2 == nil && x.Cmp(y) == 0
}

func mismatch(path string, w, g any) string {
	return fmt.Sprintf("%s: want %s, got %s", path, show(w), show(g))
}

func show(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
