package tool_test

import (
	"errors"
	"strings"
	"testing"

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
