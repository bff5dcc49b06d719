package tool

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

type fastLocation struct {
	City    string `json:"city"`
	Country string `json:"country,omitempty"`
}

type fastArgs struct {
	Location fastLocation      `json:"location"`
	Days     int               `json:"days" enum:"1,3,7"`
	Unit     string            `json:"unit,omitempty" enum:"celsius,fahrenheit"`
	Fields   []string          `json:"fields,omitempty" enum:"temp,wind,rain"`
	Stops    []fastLocation    `json:"stops,omitempty"`
	Note     *string           `json:"note,omitempty" enum:"a,b"`
	Ratio    float64           `json:"ratio,omitempty"`
	Tags     map[string]int    `json:"tags,omitempty"`
	On       bool              `json:"on,omitempty"`
	Any      any               `json:"any,omitempty"`
	Raw      json.RawMessage   `json:"raw,omitempty"`
	Nested   map[string]string `json:"nested,omitempty"`
}

// fastSchemas are the schemas the differential checks run against: inferred
// ones and hand-written ones using every keyword the fast path knows.
func fastSchemas(t testing.TB) map[string]*validator {
	t.Helper()
	out := map[string]*validator{}
	inf := parametersFor(reflectTypeOfFastArgs())
	if inf.err != nil {
		t.Fatal(inf.err)
	}
	out["inferred"] = &validator{tool: "inferred", schema: inf.check.schema, bound: inf.check.bound, fast: inf.check.fast}
	for name, params := range map[string]string{
		"bounds":   `{"type":"object","properties":{"q":{"type":"string","minLength":2,"maxLength":4},"xs":{"type":"array","items":{"type":"integer","minimum":-1,"maximum":255},"minItems":1,"maxItems":2}},"required":["q","r"]}`,
		"open":     `{"type":"object","properties":{"n":{"type":["integer","null"],"enum":[1,-2,null]}},"additionalProperties":{"type":"boolean"}}`,
		"number":   `{"type":"object","properties":{"x":{"type":"number","enum":[0,true,"s"]}}}`,
		"noschema": ``,
		"anything": `{}`,
	} {
		v, err := newValidator(name, json.RawMessage(params))
		if err != nil {
			t.Fatal(err)
		}
		if v.fast == nil {
			t.Fatalf("schema %s: no fast path, want one", name)
		}
		out[name] = v
	}
	return out
}

func reflectTypeOfFastArgs() reflect.Type { return reflect.TypeFor[fastArgs]() }

// checkAgrees fails when the fast path accepts arguments the full validator
// rejects, or when the two disagree on the result or the message.
func checkAgrees(t *testing.T, v *validator, args string) {
	t.Helper()
	got, gotErr := v.check(json.RawMessage(args))
	full := json.RawMessage(args)
	if len(bytes.TrimSpace(full)) == 0 {
		full = emptyArgs
	}
	want, wantErr := v.checkFull(full)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && sameMessage(gotErr.Error()) != sameMessage(wantErr.Error()) || string(got) != string(want) {
		t.Fatalf("%s: args %q: check = %q, %v; full validator = %q, %v", v.tool, args, got, gotErr, want, wantErr)
	}
}

// sameMessage normalises the order of violations and of names in a message
// (the full validator lists them in map order, which varies between calls) by
// sorting its words.
func sameMessage(msg string) string {
	words := strings.Fields(strings.NewReplacer(";", " ", ",", " ").Replace(msg))
	slices.Sort(words)
	return strings.Join(words, " ")
}

func TestFastCheck_InferredSchemaHasFastPath(t *testing.T) {
	t.Parallel()
	if parametersFor(reflectTypeOfFastArgs()).check.fast == nil {
		t.Fatal("inferred schema has no fast path")
	}
	// Keywords the fast path does not know send every call to the full validator.
	for _, params := range []string{
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
		`{"type":"object","properties":{"q":{"type":"string","pattern":"^a"}}}`,
		`{"type":"object","properties":{"n":{"type":"number","minimum":1.5}}}`,
		`{"type":"object","properties":{"n":{"enum":[1.5]}}}`,
	} {
		if compileFast(json.RawMessage(params)) != nil {
			t.Errorf("schema %s: fast path built, want none", params)
		}
	}
}

func TestFastCheck_AgreesWithFullValidator(t *testing.T) {
	t.Parallel()
	args := []string{
		``, `  `, `{}`, `null`, `[]`, `"x"`, `1`, `true`,
		`{"location":{"city":"Paris"},"days":3}`,
		` {"location":{"city":"Paris","country":"FR"},"days":7,"unit":"celsius","fields":["temp","wind"],"note":null} `,
		`{"location":{"city":"Paris"},"days":3,"note":"a","ratio":1.5e3,"tags":{"x":1},"on":false,"any":[{"a":null}],"raw":{"k":[1,2]},"nested":{"a":"b"}}`,
		// missing required, wrong type, enum, extra fields, malformed JSON
		`{"days":3}`, `{"location":{},"days":3}`, `{"location":{"city":1},"days":3}`,
		`{"location":{"city":"P"},"days":"3"}`, `{"location":{"city":"P"},"days":2}`,
		`{"location":{"city":"P"},"days":3,"unit":"kelvin"}`, `{"location":{"city":"P"},"days":3,"fields":["snow"]}`,
		`{"location":{"city":"P"},"days":3,"hours":1}`, `{"location":{"city":"P","zip":"1"},"days":3}`,
		`{"location":`, `{"location":{"city":"P"},"days":3}}`, `{"location":{"city":"P"},"days":3} {}`,
		`{"location":{"city":"P"},"days":03}`, `{"location":{"city":"P"},"days":3,}`, `{'a':1}`,
		// numbers JSON Schema calls integers although the text has a fraction
		`{"location":{"city":"P"},"days":3.0}`, `{"location":{"city":"P"},"days":3e0}`, `{"location":{"city":"P"},"days":-0}`,
		`{"location":{"city":"P"},"days":1e400}`, `{"location":{"city":"P"},"days":99999999999999999999}`,
		// escapes and non-ASCII
		`{"location":{"city":"P\u00e9"},"days":3}`, `{"locat\u0069on":{"city":"P"},"days":3}`,
		`{"location":{"city":"P"},"days":3,"unit":"c\u0065lsius"}`, "{\"location\":{\"city\":\"\xff\"},\"days\":3}",
		`{"location":{"city":"\ud800"},"days":3}`, "{\"location\":{\"city\":\"a\tb\"},\"days\":3}",
		// duplicates: the last one counts for the full validator
		`{"location":{"city":"P"},"days":2,"days":3}`, `{"location":{"city":"P"},"days":3,"days":2}`,
		// hand-written schemas
		`{"q":"ab","r":1}`, `{"q":"a","r":1}`, `{"q":"abcde","r":1}`, `{"q":"ab"}`, `{"q":"ab","r":1,"xs":[]}`,
		`{"q":"ab","r":1,"xs":[1,2,3]}`, `{"q":"ab","r":1,"xs":[1.5]}`, `{"q":"ab","r":1,"xs":[-1,255]}`, `{"q":"ab","r":1,"xs":[-2]}`, `{"q":"ab","r":1,"xs":[256]}`, `{"q":"ab","r":1,"xs":[2.0]}`, `{"q":"ab","r":1,"xs":[99999999999999999999]}`, `{"q":"héé","r":1}`,
		`{"n":1}`, `{"n":-2}`, `{"n":null}`, `{"n":2}`, `{"n":1.0}`, `{"x":true,"y":false}`, `{"x":true,"y":1}`,
		`{"x":0}`, `{"x":-0}`, `{"x":0.0}`, `{"x":true}`, `{"x":"s"}`, `{"x":"t"}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	}
	for name, v := range fastSchemas(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, a := range args {
				checkAgrees(t, v, a)
			}
		})
	}
}

// FuzzFastCheck is a differential fuzz target: the fast path must never
// accept what the full validator rejects, and every message must be the full
// validator's.
func FuzzFastCheck(f *testing.F) {
	for _, seed := range []string{
		`{"location":{"city":"Paris"},"days":3,"unit":"celsius","fields":["temp"],"stops":[{"city":"x"}]}`,
		`{"q":"ab","r":1,"xs":[1]}`, `{"n":1,"b":true}`, `{"x":0}`, `{"days":3.0}`, `[1,{"a":"\u0041"}]`, ``, `nul`,
	} {
		f.Add(seed)
	}
	vs := fastSchemas(f)
	f.Fuzz(func(t *testing.T, args string) {
		for _, v := range vs {
			checkAgrees(t, v, args)
		}
	})
}

// BenchmarkCheck isolates argument validation for the forecast-like schema.
func BenchmarkCheck(b *testing.B) {
	v := fastSchemas(b)["inferred"]
	args := json.RawMessage(`{"location":{"city":"Paris","country":"FR"},"days":3,"unit":"celsius","fields":["temp","wind"]}`)
	for _, bc := range []struct {
		name string
		fn   func(json.RawMessage) (json.RawMessage, error)
	}{{"fast", v.check}, {"full", v.checkFull}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.fn(args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
