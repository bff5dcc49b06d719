package tool_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/internal/schemabound"
	"github.com/agentryhq/agentry/tool"
)

// TestNewSet_ParametersWhoseValidationCannotEndAreRefused: a tool's schema
// (an MCP server's, say) whose subschemas double at each step validated
// arguments for ever; NewSet refuses it, naming the tool.
func TestNewSet_ParametersWhoseValidationCannotEndAreRefused(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"type":"object","$ref":"#/$defs/d0","$defs":{`)
	for i := range 30 {
		ref := `{"$ref":"#/$defs/d` + strings.Repeat("x", i+1) + `"}`
		b.WriteString(`"d` + strings.Repeat("x", i) + `":{"allOf":[` + ref + `,` + ref + `]},`)
	}
	b.WriteString(`"d` + strings.Repeat("x", 30) + `":{"type":"object"}}}`)
	doubling := strings.Replace(b.String(), `"$ref":"#/$defs/d0"`, `"$ref":"#/$defs/d"`, 1)
	_, err := tool.NewSet([]tool.Tool{echoRaw("doubling", doubling)})
	if !errors.Is(err, schemabound.ErrUnbounded) || !strings.Contains(err.Error(), "doubling") {
		t.Fatalf("NewSet: %v, want ErrUnbounded naming the tool", err)
	}
}

// TestExecute_ArgumentsThatMultiplyValidationAreRefused: arguments nested 40
// deep through a schema applying two branches at each level were validated
// 2^40 times over, for ever; they are invalid arguments now, with a message
// the model can act on, and shallow ones pass.
func TestExecute_ArgumentsThatMultiplyValidationAreRefused(t *testing.T) {
	t.Parallel()
	s := mustSet(t, echoRaw("tree", `{"type":"object","properties":{"t":{"$ref":"#/$defs/a"}},`+
		`"$defs":{"a":{"anyOf":[{"type":"array","items":{"$ref":"#/$defs/a"},"maxItems":0},{"type":"array","items":{"$ref":"#/$defs/a"}}]}}}`))
	nested := func(depth int) string {
		return `{"t":` + strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth) + `}`
	}
	res := s.Execute(t.Context(), call("tree", nested(40)))
	if !errors.Is(res.Err, tool.ErrInvalidArguments) || !errors.Is(res.Err, schemabound.ErrTooCostly) {
		t.Fatalf("deep arguments: %v", res.Err)
	}
	if res := s.Execute(t.Context(), call("tree", nested(4))); res.Err == nil || !strings.Contains(res.Err.Error(), "at /t") {
		// 1 at the bottom is not an array: a validation error, priced and run.
		t.Fatalf("shallow arguments: %v", res.Err)
	}
}

// TestExecute_ReferencesThePricingMissedAreFollowed: santhosh-tekuri's
// validator follows references schemabound did not (into an unknown
// keyword or an enum's value, $recursiveRef, draft 4's "id", a draft 7
// $id beside a $ref, which that draft ignores), so through each a schema
// doubling its work at every level of the arguments was accepted and
// validated 40-deep arguments for ever. Each is refused or priced now;
// an honest draft 2019-09 recursive tree still validates.
func TestExecute_ReferencesThePricingMissedAreFollowed(t *testing.T) {
	t.Parallel()
	twice := func(ref string) string {
		return `"allOf":[{"items":{` + ref + `}},{"items":{` + ref + `}}]`
	}
	schemas := map[string]string{
		"unknown keyword": `{"x":{` + twice(`"$ref":"#/x"`) + `},"$ref":"#/x"}`,
		"enum value":      `{"enum":[{` + twice(`"$ref":"#/enum/0"`) + `}],"$ref":"#/enum/0"}`,
		"recursiveRef": `{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,` +
			twice(`"$recursiveRef":"#"`) + `}`,
		"draft 4 id": `{"$schema":"http://json-schema.org/draft-04/schema#","definitions":{"a":{"id":"http://x.example/a.json",` +
			twice(`"$ref":"http://x.example/a.json"`) + `}},"$ref":"#/definitions/a"}`,
		"draft 7 id beside ref": `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{` +
			`"a":{"$id":"http://x.example/a.json","$ref":"#/definitions/b"},"b":{` + twice(`"$ref":"#/definitions/a"`) + `}},"$ref":"#/definitions/b"}`,
		// draft 7 named where it has no identifier of that draft: ignored, the
		// $id beside the $ref sets the base as in 2020-12.
		"draft 7 without its identifier": `{"$defs":{"a":{"$schema":"http://json-schema.org/draft-07/schema#","$id":"http://x.example/a.json",` +
			`"$ref":"#/$defs/b","$defs":{"b":{` + twice(`"$ref":"http://x.example/a.json"`) + `}}}},"$ref":"#/$defs/a"}`,
	}
	deep := strings.Repeat("[", 40) + strings.Repeat("]", 40)
	for name, schema := range schemas {
		s, err := tool.NewSet([]tool.Tool{echoRaw("t", schema)})
		if err != nil {
			if !errors.Is(err, schemabound.ErrUnbounded) {
				t.Errorf("%s: NewSet: %v", name, err)
			}
			continue
		}
		done := make(chan error, 1)
		go func() { done <- s.Execute(t.Context(), call("t", deep)).Err }()
		select {
		case err := <-done:
			if !errors.Is(err, schemabound.ErrTooCostly) {
				t.Errorf("%s: %v, want ErrTooCostly", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: deep arguments still validating after 5s", name)
		}
	}
	tree := mustSet(t, echoRaw("tree", `{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,`+
		`"type":"object","properties":{"kids":{"type":"array","items":{"$recursiveRef":"#"}}}}`))
	if res := tree.Execute(t.Context(), call("tree", `{"kids":[{"kids":[]},{"kids":[{}]}]}`)); res.Err != nil {
		t.Fatalf("honest tree: %v", res.Err)
	}
	if res := tree.Execute(t.Context(), call("tree", `{"kids":[{"kids":1}]}`)); !errors.Is(res.Err, tool.ErrInvalidArguments) {
		t.Fatalf("bad tree: %v", res.Err)
	}
}

// TestExecute_NumbersTheValidatorCannotConvertAreRefused:
// santhosh-tekuri/jsonschema converts an argument's number to a big.Rat for
// minimum, multipleOf, uniqueItems, …: one whose exponent big.Rat refuses
// (1e10000000) made it dereference nil, a panic outside any recover that
// killed the process, and one with a large exponent or many digits took
// tens of milliseconds to seconds each, without bound for long arguments.
// Such numbers are invalid arguments now; ordinary ones still validate.
func TestExecute_NumbersTheValidatorCannotConvertAreRefused(t *testing.T) {
	t.Parallel()
	s := mustSet(t,
		echoRaw("min", `{"type":"object","properties":{"n":{"minimum":0}}}`),
		echoRaw("unique", `{"type":"object","properties":{"l":{"type":"array","uniqueItems":true}}}`),
		echoRaw("ints", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"integer"}}}}`))
	list := func(n int, num string) string {
		return `{"l":[` + strings.TrimSuffix(strings.Repeat(num+",", n), ",") + `]}`
	}
	for _, c := range []struct{ tool, args string }{
		{"min", `{"n":1e10000000}`},
		{"min", `{"n":-1E-10000000}`},
		{"unique", list(25, "1e10000000")},
		{"ints", list(200, "1e1000000")},
		{"ints", `{"l":[1.` + strings.Repeat("1", 100_000) + `]}`},
	} {
		done := make(chan error, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					done <- fmt.Errorf("panic: %v", r)
				}
			}()
			done <- s.Execute(t.Context(), call(c.tool, c.args)).Err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, tool.ErrInvalidArguments) {
				t.Errorf("%s %.40s…: %v, want invalid arguments", c.tool, c.args, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%s %.40s…: still validating after 2s", c.tool, c.args)
		}
	}
	for _, c := range []struct{ tool, args string }{
		{"min", `{"n":1e308}`},
		{"min", `{"n":123456789012345678901234567890}`},
		{"unique", `{"l":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,1.5e300]}`},
		{"ints", `{"l":[1,2e3,-4]}`},
	} {
		if res := s.Execute(t.Context(), call(c.tool, c.args)); res.Err != nil {
			t.Errorf("%s %s: %v", c.tool, c.args, res.Err)
		}
	}
}

// TestNewSet_SchemaNumbersTheValidatorCannotConvertAreRefused: a tool
// schema's "multipleOf":1e-10000000 (an MCP server's) made
// santhosh-tekuri/jsonschema dereference nil, a panic; NewSet refuses it,
// naming the tool and the place.
func TestNewSet_SchemaNumbersTheValidatorCannotConvertAreRefused(t *testing.T) {
	t.Parallel()
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		var s *tool.Set
		if s, err = tool.NewSet([]tool.Tool{echoRaw("tiny", `{"type":"object","properties":{"n":{"multipleOf":1e-10000000}}}`)}); err == nil {
			err = s.Execute(t.Context(), call("tiny", `{"n":1}`)).Err
		}
	}()
	if err == nil || !strings.Contains(err.Error(), "tiny") || !strings.Contains(err.Error(), "#/properties/n/multipleOf") {
		t.Fatalf("NewSet: %v, want an error naming the tool and the number", err)
	}
}
