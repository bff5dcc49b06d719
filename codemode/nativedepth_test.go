package codemode_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
)

// TestSandbox_CyclesOfBuiltinsEndAsCallDepth: built-in functions that call
// one another from Go (a conversion calling toString, a getter, a bound
// function calling its target) push no frame goja counts, so a cycle made
// only of them recursed in Go until the goroutine's stack passed 1 GB: a
// fatal error that ended the process (the first case did, whatever the
// call depth limit). Each must end as an aborted cell (call_depth), and the
// next cell of the session works.
func TestSandbox_CyclesOfBuiltinsEndAsCallDepth(t *testing.T) {
	cm := newCM(t, codemode.Config{Results: &memResults{}, CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute})
	for _, tt := range []struct{ name, code string }{
		{"call bound to a constructor", `const o = {}; o.toString = Function.prototype.call.bind(String, null, o); String(o)`},
		{"constructor bound to its argument", `const o = {}; o.toString = String.bind(null, o); String(o)`},
		{"bound getter", `const o = {}; Object.defineProperty(o, "x", {get: Reflect.get.bind(null, o, "x")}); o.x`},
		{"toLocaleString as toString", `const o = {}; o.toString = Object.prototype.toLocaleString; String(o)`},
		{"toString as the toStringTag getter", `const o = {}; Object.defineProperty(o, Symbol.toStringTag, {get: Object.prototype.toString}); String(o)`},
		{"Error toString as its name", `const o = {}; Object.defineProperty(o, "name", {get: Error.prototype.toString}); Error.prototype.toString.call(o)`},
		{"exec bound to its lastIndex", `const re = /x/g; re.lastIndex = {valueOf: RegExp.prototype.exec.bind(re, "x")}; re.exec("x")`},
		{"JSON.stringify as toJSON", `const o = {}; o.toJSON = JSON.stringify.bind(null, o); JSON.stringify(o)`},
		{"console.log as toJSON", `const o = {}; o.toJSON = console.log.bind(null, o); console.log(o)`},
		{"a tool as a getter of its argument", `const o = {}; Object.defineProperty(o, "text", {get: echo.bind(null, o), enumerable: true}); await echo(o)`},
		{"results as toString", `const o = {}; o.toString = results.get.bind(null, o); String(o)`},
		{"sort as toString", `const a = [0, 0]; a[0] = a; a[1] = a; a.toString = Array.prototype.sort; String(a)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			session := "cycle-" + strings.ReplaceAll(tt.name, " ", "-")
			c := runCell(t, cm, session, tt.code)
			if c.Status != codemode.StatusAborted || c.Error == nil || c.Error.Reason != codemode.ReasonCallDepth {
				t.Fatalf("status %s, error %+v: want aborted, %s", c.Status, c.Error, codemode.ReasonCallDepth)
			}
			if got := resultOf(t, runCell(t, cm, session, `[1, 2].map(String).join("+")`)); got != "1+2" {
				t.Fatalf("next cell: %v", got)
			}
		})
	}
}

// TestSandbox_GuardedBuiltinsBehaveAsJavaScripts: the counting stand-ins
// keep what code can observe of a builtin (identity, name, length, bound
// functions of constructors and of methods) and goja's fast paths.
func TestSandbox_GuardedBuiltinsBehaveAsJavaScripts(t *testing.T) {
	cm := newCM(t, codemode.Config{})
	code := `const S = String.bind(null, "a"), P = Array.prototype.push.bind([]), T = String.prototype.trim.bind(null);
let threw = false; try { T() } catch (e) { threw = e instanceof TypeError }
class Pt { constructor(x) { this.x = x } }
const B = Pt.bind(null, 3);
[Map.prototype.entries === Map.prototype[Symbol.iterator], Set.prototype.keys === Set.prototype.values,
 String.prototype.trimLeft === String.prototype.trimStart, Array.prototype.map.name, Array.prototype.map.length,
 S(), new S() instanceof String, S.name, S.length, P(1, 2), threw, new B().x, new B() instanceof Pt, B.name,
 Object.prototype.toString.call([]), [..."ab"].length, new Set([1, 1, 2]).size, "aXbX".replace(/X/g, "-"),
 Function.prototype.toString.call(Math.max)]`
	got := jsonText(resultOf(t, runCell(t, cm, "s", code)))
	want := `[true,true,true,"map",1,"a",true,"bound String",0,2,true,3,true,"bound Pt","[object Array]",2,2,"a-b-","function max() { [native code] }"]`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
