package tool

import (
	"encoding/json"
	"errors"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// compiledBoth compiles SchemaFor(t) with both validators Agentry uses: the
// tool arguments' (newValidator) and the structured output's (jsonschema-go).
func compiledBoth(t testing.TB, typ reflect.Type) (*validator, *jsonschema.Resolved) {
	t.Helper()
	s, err := SchemaFor(typ)
	if err != nil {
		t.Fatalf("SchemaFor(%v): %v", typ, err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	v, err := newValidator(typ.String(), raw)
	if err != nil {
		t.Fatalf("%v: %v (schema %s)", typ, err, raw)
	}
	var back jsonschema.Schema
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	rs, err := back.Resolve(nil)
	if err != nil {
		t.Fatalf("%v: jsonschema-go: %v (schema %s)", typ, err, raw)
	}
	return v, rs
}

func validateBoth(v *validator, rs *jsonschema.Resolved, text string) (argsErr, outputErr error) {
	_, argsErr = v.checkFull(json.RawMessage(text))
	var doc any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		return argsErr, err
	}
	return argsErr, rs.Validate(doc)
}

type celsius float64

// UnmarshalJSON reads 20 or "20C": its own form, not its kind's.
func (c *celsius) UnmarshalJSON(b []byte) error {
	s := strings.TrimSuffix(strings.Trim(string(b), `"`), "C")
	var f float64
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		return err
	}
	*c = celsius(f)
	return nil
}

func (c celsius) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(float64(c))
	return []byte(`"` + string(b) + `C"`), err
}

type (
	dashName struct {
		//lint:ignore SA5008 a property named "-" is the case under test
		Dash int `json:"-,"`
		Skip int `json:"-"`
	}
	omitZero struct {
		When time.Time `json:"when,omitzero"`
		N    int       `json:"n,omitzero"`
	}
	unexportedTagged struct {
		//lint:ignore U1000 encoding/json ignores it (with a json tag too, which go vet reports)
		x int
		Y int `json:"y"`
	}
	anonField struct {
		A struct {
			X int `json:"x"`
		} `json:"a"`
	}
	withIfaces struct {
		Any any   `json:"any"`
		Err error `json:"err"`
	}
	withCustom struct {
		T celsius `json:"t"`
	}
	quoted struct {
		N int     `json:"n,string"`
		U uint    `json:"u,string"`
		B bool    `json:"b,string"`
		F float64 `json:"f,string"`
		S string  `json:"s,string"`
	}
	pp struct {
		P **int `json:"p"`
	}
	agreeTree struct {
		Kids []agreeTree         `json:"kids,omitempty"`
		ByID map[int8]*agreeTree `json:"by_id,omitempty"`
	}
	gen[T any] struct {
		V    T       `json:"v"`
		Next *gen[T] `json:"next,omitempty"`
	}
)

// TestSchemaFor_AgreesWithEncodingJSON checks, type by type, that what
// encoding/json writes validates against SchemaFor's schema (under both
// validators) and decodes, and that text encoding/json refuses is refused
// by validation already. stricter lists text encoding/json takes that the
// schema refuses on purpose; decodeOnly text the schema cannot tell apart,
// which encoding/json refuses after validation (a clear invalid-arguments
// error, not a mismatch of schema and decoder).
func TestSchemaFor_AgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	two := 2
	ptwo := &two
	cases := []struct {
		typ        reflect.Type
		values     []any
		invalid    []string
		stricter   []string
		decodeOnly []string
	}{
		{typ: reflect.TypeFor[[3]int](), values: []any{[3]int{1, 2, 3}},
			invalid: []string{`"x"`, `[1,"a",3]`}, stricter: []string{`[1]`, `[1,2,3,4]`, `null`}},
		{typ: reflect.TypeFor[[2]byte](), values: []any{[2]byte{1, 255}}, invalid: []string{`"AQI="`, `[1,256]`}},
		{typ: reflect.TypeFor[[]byte](), values: []any{[]byte("hi"), []byte{}, []byte(nil), []byte{0, 0xff, 0xfe}},
			invalid: []string{`"!!"`, `"aGk"`, `"aGk=="`, `"aGk=x"`, `5`}, stricter: []string{`[1,2]`}},
		{typ: reflect.TypeFor[uint8](), values: []any{uint8(0), uint8(255)},
			invalid: []string{`256`, `-1`, `1.5`, `"1"`}, decodeOnly: []string{`2.0`, `1e2`}},
		{typ: reflect.TypeFor[int8](), values: []any{int8(-128), int8(127)}, invalid: []string{`128`, `-129`}},
		{typ: reflect.TypeFor[uint64](), values: []any{uint64(math.MaxUint64), uint64(0)},
			invalid: []string{`-1`}, decodeOnly: []string{`18446744073709551616`}},
		{typ: reflect.TypeFor[int64](), values: []any{int64(math.MinInt64), int64(math.MaxInt64)},
			decodeOnly: []string{`9223372036854775808`}},
		{typ: reflect.TypeFor[float32](), values: []any{float32(1.5), float32(math.MaxFloat32), float32(-math.SmallestNonzeroFloat32)},
			invalid: []string{`"1.5"`}, decodeOnly: []string{`1e39`}},
		{typ: reflect.TypeFor[time.Duration](), values: []any{5 * time.Second}, invalid: []string{`"5s"`}},
		{typ: reflect.TypeFor[time.Time](), values: []any{time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)},
			invalid: []string{`5`}, decodeOnly: []string{`"yesterday"`}, stricter: []string{`null`}},
		{typ: reflect.TypeFor[pp](), values: []any{pp{P: &ptwo}, pp{}}, invalid: []string{`{"p":"2"}`}},
		{typ: reflect.TypeFor[dashName](), values: []any{dashName{Dash: 5}}, invalid: []string{`{"-":"x"}`},
			stricter: []string{`{"-":1,"Skip":2}`}},
		{typ: reflect.TypeFor[omitZero](), values: []any{omitZero{}, omitZero{When: time.Unix(0, 0).UTC(), N: 1}}},
		{typ: reflect.TypeFor[unexportedTagged](), values: []any{unexportedTagged{Y: 1}}, stricter: []string{`{"x":1,"y":1}`}},
		{typ: reflect.TypeFor[anonField](), values: []any{anonField{}}, invalid: []string{`{"a":{"x":"1"}}`}},
		{typ: reflect.TypeFor[withIfaces](), values: []any{withIfaces{Any: map[string]any{"k": []any{1.0, "x"}}}, withIfaces{Any: "s"}},
			invalid: []string{`{"any":1,"err":{}}`, `{"any":1,"err":"boom"}`}},
		{typ: reflect.TypeFor[withCustom](), values: []any{withCustom{T: 20.5}}},
		{typ: reflect.TypeFor[quoted](), values: []any{quoted{N: -5, U: 7, B: true, F: 1.5e-7, S: `a"b`}},
			invalid: []string{
				`{"n":"","u":"1","b":"true","f":"1","s":"\"\""}`, `{"n":"1.0","u":"1","b":"true","f":"1","s":"\"\""}`,
				`{"n":" 1","u":"1","b":"true","f":"1","s":"\"\""}`, `{"n":"1","u":"-1","b":"true","f":"1","s":"\"\""}`,
				`{"n":"1","u":"1","b":"yes","f":"1","s":"\"\""}`, `{"n":"1","u":"1","b":"true","f":".5","s":"\"\""}`,
				`{"n":"1","u":"1","b":"true","f":"1","s":"abc"}`,
			}},
		{typ: reflect.TypeFor[map[int]string](), values: []any{map[int]string{1: "a", -2: "b"}},
			// A nil map is null to encoding/json; the schema, as jsonschema-go's, wants an object.
			invalid: []string{`{"a":"x"}`, `{"1.0":"x"}`, `{"0x1":"x"}`, `{"1_0":"x"}`, `{"１":"x"}`}, stricter: []string{`null`}},
		{typ: reflect.TypeFor[map[uint16]bool](), values: []any{map[uint16]bool{65535: true}},
			invalid: []string{`{"-1":true}`, `{"+1":true}`}, decodeOnly: []string{`{"65536":true}`}},
		{typ: reflect.TypeFor[map[netip.Addr]int](), values: []any{map[netip.Addr]int{netip.MustParseAddr("::1"): 1}},
			decodeOnly: []string{`{"bad":1}`}},
		{typ: reflect.TypeFor[agreeTree](), values: []any{agreeTree{Kids: []agreeTree{{ByID: map[int8]*agreeTree{-3: {}}}}}},
			invalid: []string{`{"kids":[{"by_id":{"x":{}}}]}`, `{"kids":[{"kids":[{"kids":1}]}]}`}, decodeOnly: []string{`{"by_id":{"300":null}}`}},
		{typ: reflect.TypeFor[gen[int]](), values: []any{gen[int]{V: 1, Next: &gen[int]{V: 2}}}, invalid: []string{`{"v":1,"next":{"v":"2"}}`}},
		{typ: reflect.TypeFor[*gen[string]](), values: []any{&gen[string]{V: "a", Next: &gen[string]{V: "b"}}, (*gen[string])(nil)},
			invalid: []string{`{"v":"a","next":{"v":2}}`}},
	}
	for _, c := range cases {
		t.Run(c.typ.String(), func(t *testing.T) {
			v, rs := compiledBoth(t, c.typ)
			decode := func(text string) error { return json.Unmarshal([]byte(text), reflect.New(c.typ).Interface()) }
			for _, val := range c.values {
				b, err := json.Marshal(val)
				if err != nil {
					t.Fatal(err)
				}
				if argsErr, outErr := validateBoth(v, rs, string(b)); argsErr != nil || outErr != nil {
					t.Errorf("encoding/json wrote %s: arguments: %v; output: %v", b, argsErr, outErr)
				}
				if err := decode(string(b)); err != nil {
					t.Errorf("%s does not decode back: %v", b, err)
				}
			}
			for _, text := range c.invalid {
				if decode(text) == nil {
					t.Errorf("%s: encoding/json decodes it (a wrong test case)", text)
				}
				if argsErr, outErr := validateBoth(v, rs, text); argsErr == nil || outErr == nil {
					t.Errorf("%s: encoding/json refuses it, validation passes it: arguments: %v; output: %v", text, argsErr, outErr)
				}
			}
			for _, text := range c.stricter {
				if err := decode(text); err != nil {
					t.Errorf("%s: encoding/json refuses it (%v): not a stricter case", text, err)
				}
				if argsErr, outErr := validateBoth(v, rs, text); argsErr == nil || outErr == nil {
					t.Errorf("%s: validation passes it: arguments: %v; output: %v", text, argsErr, outErr)
				}
			}
			for _, text := range c.decodeOnly {
				if argsErr, _ := validateBoth(v, rs, text); argsErr != nil {
					t.Errorf("%s: now refused by validation (%v): move it to invalid", text, argsErr)
				}
				var ute *json.UnmarshalTypeError
				if err := decode(text); err == nil {
					t.Errorf("%s: encoding/json decodes it", text)
				} else if c.typ != reflect.TypeFor[time.Time]() && c.typ != reflect.TypeFor[map[netip.Addr]int]() && !errors.As(err, &ute) {
					t.Errorf("%s: %v, want encoding/json's type error", text, err)
				}
			}
		})
	}
}

// fuzzShapes gathers the shapes whose schema and decoder once disagreed.
type fuzzShapes struct {
	*hiddenPart
	Tree  agreeTree        `json:"tree"`
	Gen   *gen[uint8]      `json:"gen,omitempty"`
	Keys  map[int16]string `json:"keys,omitempty"`
	Data  []byte           `json:"data,omitempty"`
	Three [3]int8          `json:"three,omitempty"`
	Err   error            `json:"err,omitempty"`
	Temp  *celsius         `json:"temp,omitempty"`
	Any   map[string]any   `json:"any,omitempty"`
	Quote int              `json:"quote,string,omitempty"`
}

type hiddenPart struct {
	Secret string `json:"secret"`
}

// FuzzSchemaFor_ValidArgumentsDecode: arguments the full validator accepts
// decode with encoding/json, except for the number forms no JSON Schema can
// tell apart (2.0 or 1e2 for an integer, integers past int64 or a key's
// range), which encoding/json refuses with its type error.
func FuzzSchemaFor_ValidArgumentsDecode(f *testing.F) {
	for _, seed := range []string{
		`{"tree":{}}`, `{"tree":{"kids":[{"by_id":{"-3":{"kids":[]}}}]},"gen":{"v":1,"next":{"v":255}}}`,
		`{"tree":{},"keys":{"+12":"a","-7":"b"},"data":"aGVs\nbG8=","three":[1,2,3],"err":null}`,
		`{"tree":{},"temp":"20C","any":{"x":[1,{"y":null}]},"quote":"12"}`,
		`{"tree":{},"secret":"s"}`, `{"tree":{"by_id":{"128":null}}}`, `{"tree":{},"gen":{"v":2.0}}`,
	} {
		f.Add(seed)
	}
	v, _ := compiledBoth(f, reflect.TypeFor[fuzzShapes]())
	f.Fuzz(func(t *testing.T, args string) {
		if _, err := v.checkFull(json.RawMessage(args)); err != nil {
			return
		}
		var in fuzzShapes
		err := json.Unmarshal([]byte(args), &in)
		var ute *json.UnmarshalTypeError
		if err != nil && !(errors.As(err, &ute) && strings.HasPrefix(ute.Value, "number")) {
			t.Fatalf("%q validates but does not decode: %v", args, err)
		}
	})
}
