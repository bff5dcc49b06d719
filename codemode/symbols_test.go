package codemode_test

import (
	"strings"
	"testing"

	"github.com/agentryhq/agentry/codemode"
)

// TestEncode_SymbolsAreLeftOutOfJSONAndShownAsSymbols: the encoder (which
// is also JSON.stringify) wrote a symbol as a string of its description, so
// JSON.stringify({a: Symbol("x")}) was {"a":"x"} (JavaScript: {}), a tool
// was sent "hi" for {text: Symbol("hi")}, and the model read the result
// Symbol("x") and console.log(Symbol("z")) as the strings "x" and "z".
func TestEncode_SymbolsAreLeftOutOfJSONAndShownAsSymbols(t *testing.T) {
	cm := newCM(t, codemode.Config{})
	if got := resultOf(t, runCell(t, cm, "s", `JSON.stringify({a: Symbol("x"), b: [Symbol("y")], c: 1})`)); got != `{"b":[null],"c":1}` {
		t.Errorf("JSON.stringify: %v", got)
	}
	if got := resultOf(t, runCell(t, cm, "s", `JSON.stringify(Symbol("x")) === undefined`)); got != true {
		t.Errorf("JSON.stringify of a symbol: %v", got)
	}
	if got := resultOf(t, runCell(t, cm, "s", `Symbol("x")`)); got != "Symbol(x)" {
		t.Errorf("result: %v", got)
	}
	if got := resultOf(t, runCell(t, cm, "s", `({a: Symbol("x"), b: 1})`)); jsonText(got) != `{"b":1}` {
		t.Errorf("result object: %v", jsonText(got))
	}
	if c := runCell(t, cm, "s", `console.log(Symbol("z"), Symbol.iterator)`); c.Stdout != "Symbol(z) Symbol(Symbol.iterator)\n" {
		t.Errorf("console.log: %q", c.Stdout)
	}
	c := runCell(t, cm, "s", `await echo({text: Symbol("hi")})`)
	if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, "text") {
		t.Errorf("a tool given a symbol: status %s, result %s, error %+v", c.Status, c.Result, c.Error)
	}
}
