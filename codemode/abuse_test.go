package codemode_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
)

// TestSandbox_AbuseEndsInACleanErrorAndTheNextCellWorks is the escape and
// abuse suite: every hostile cell ends as an error or an abort with a
// reason, the process survives, and the same session (and another) keeps
// working. It does not run in parallel: the memory cases watch the process
// heap.
func TestSandbox_AbuseEndsInACleanErrorAndTheNextCellWorks(t *testing.T) {
	// The wall-clock cell timeout is far above the CPU limit: on a loaded
	// machine a second of CPU can take many seconds of wall time, and the
	// cases below test the CPU, depth and memory limits, not the timeout.
	cm := newCM(t, codemode.Config{CPUTimeLimit: time.Second, CellTimeout: 10 * time.Minute})
	// Cases that must end on another limit (memory, depth, a refused
	// operation) run where the CPU limit is far away: under -race on a loaded
	// machine their work before the limit (copies, GC assists, a 100,000-step
	// loop) can take more than a second of CPU, and the heap watcher may be
	// scheduled late.
	roomy := newCM(t, codemode.Config{CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute})
	tests := []struct {
		name   string
		code   string
		status codemode.Status
		want   string // in the error message, or the abort reason
	}{
		// Escapes.
		{"constructor trick", `this.constructor.constructor("return process")()`, codemode.StatusError, "code generation from strings is disabled"},
		{"constructor of a handle", `get_weather.constructor("return 1")()`, codemode.StatusError, "code generation from strings is disabled"},
		{"async function constructor", `Object.getPrototypeOf(async function () {}).constructor("return 1")`, codemode.StatusError, "code generation"},
		{"generator function constructor", `Object.getPrototypeOf(function* () {}).constructor("yield 1")`, codemode.StatusError, "code generation"},
		{"eval", `eval("1 + 1")`, codemode.StatusError, "code generation"},
		{"indirect eval", `(0, globalThis["ev" + "al"])("1")`, codemode.StatusError, "code generation"},
		{"require", `require("fs")`, codemode.StatusError, "require is not defined"},
		{"import", `import("fs")`, codemode.StatusError, ""},
		{"BigInt exponentiation", `BigInt(10) ** BigInt(1e9)`, codemode.StatusError, "BigInt is not defined"},
		{"binary buffers", `new ArrayBuffer(2 ** 31)`, codemode.StatusError, "ArrayBuffer is not defined"},
		{"proxy", `new Proxy({}, {})`, codemode.StatusError, "Proxy is not defined"},
		// CPU.
		{"infinite loop", `while (true) {}`, codemode.StatusAborted, codemode.ReasonCPUTime},
		{"busy loop inside a promise", `await new Promise(resolve => { while (true) {} })`, codemode.StatusAborted, codemode.ReasonCPUTime},
		{"busy loop in a microtask", `await Promise.resolve().then(() => { for (;;) {} })`, codemode.StatusAborted, codemode.ReasonCPUTime},
		{"catching the interrupt and looping again", `for (;;) { try { while (true) {} } catch (e) {} }`, codemode.StatusAborted, codemode.ReasonCPUTime},
		{"looping in finally", `try { while (true) {} } finally { while (true) {} }`, codemode.StatusAborted, codemode.ReasonCPUTime},
		{"busy loop after a tool call", `await echo({text: "x"}); while (true) {}`, codemode.StatusAborted, codemode.ReasonCPUTime},
		{"catastrophic regexp", `new RegExp("(a+)+\\1").test("a".repeat(40) + "b")`, codemode.StatusError, "backtracking"},
		{"regexp from a string pattern", `"aaa".match("(?<=a)a")`, codemode.StatusError, "backtracking"},
		// Depth.
		{"deep recursion", `(function f(n) { return f(n + 1) + 1 })(0)`, codemode.StatusAborted, codemode.ReasonCallDepth},
		{"caught deep recursion", `try { (function f() { f() })() } catch (e) { "caught" }`, codemode.StatusAborted, codemode.ReasonCallDepth},
		{"deeply nested JSON", `JSON.parse("[".repeat(100000) + "]".repeat(100000))`, codemode.StatusError, "nests deeper"},
		{"deeply nested array to string", `let a = []; for (let i = 0; i < 100000; i++) a = [a]; String(a)`, codemode.StatusError, "nested deeper"},
		{"deeply nested array to JSON", `let a = []; for (let i = 0; i < 100000; i++) a = [a]; JSON.stringify(a)`, codemode.StatusError, "nests deeper"},
		{"bound function chain", `let f = () => 1; for (let i = 0; i < 100000; i++) f = f.bind(null); f()`, codemode.StatusError, "bound functions are limited"},
		// Memory.
		{"1 GB string", `"x".repeat(2 ** 30).length`, codemode.StatusError, "over the sandbox's limit"},
		{"1 GB padding", `"x".padEnd(2 ** 30)`, codemode.StatusError, "over the sandbox's limit"},
		{"string doubling", `let s = "x"; while (true) s += s`, codemode.StatusAborted, codemode.ReasonMemory},
		{"10-million-element array filled", `new Array(1e7).fill(0).length`, codemode.StatusError, "over the sandbox's limit"},
		{"10-million-element array pushed", `const a = []; for (let i = 0; i < 1e7; i++) a.push(i); a.length`, "", "over the sandbox's limit|cpu_time"},
		{"10-million-element array by index", `const a = []; for (let i = 0; i < 1e7; i++) a[i] = {i}; a.length`, codemode.StatusAborted, ""},
		{"spread of a huge sparse array", `const a = []; a.length = 2 ** 32 - 1; [...a].length`, codemode.StatusError, "over the sandbox's limit"},
		{"join of a huge array-like", `Array.prototype.join.call({length: 2 ** 32 - 1}, "x")`, codemode.StatusError, "over the sandbox's limit"},
		{"apply with a huge array-like", `String.fromCharCode.apply(null, {length: 1e9})`, codemode.StatusError, "arguments is over"},
		{"Array.from a huge array-like", `Array.from({length: 1e9})`, codemode.StatusError, "over the sandbox's limit"},
		{"replaceAll amplification", `"ab".repeat(1e4).replaceAll("", "x".repeat(1e4)).length`, codemode.StatusError, "over the sandbox's limit"},
		{"split of a long string into characters", `"x".repeat(8e6).split("").length`, codemode.StatusError, "over the sandbox's limit"},
		{"JSON of a huge sparse array", `JSON.stringify(new Array(2 ** 32 - 1))`, codemode.StatusError, "over the sandbox's limit"},
		{"sort of a huge sparse array", `const a = []; a[2 ** 31] = 1; a.sort()`, codemode.StatusError, "over the sandbox's limit"},
		{"many objects", `const o = {}; for (let i = 0; ; i++) o["k" + i] = "v".repeat(100) + i`, codemode.StatusAborted, ""},
		// Tools.
		{"10k parallel tool calls", `await Promise.all(Array.from({length: 10000}, (_, i) => echo({text: "" + i})))`, "", "at most 256 times|cpu_time"},
		{"tool called with wrong argument types", `await get_weather({city: ["Paris"]})`, codemode.StatusError, "invalid arguments for get_weather"},
	}
	for _, tt := range tests {
		on := cm
		if tt.want != "" && !strings.Contains(tt.want, codemode.ReasonCPUTime) {
			on = roomy
		}
		c := runCell(t, on, "abuse", tt.code)
		got := ""
		if c.Error != nil {
			got = c.Error.Message + " " + c.Error.Reason
		}
		matched := false
		for _, w := range strings.Split(tt.want, "|") {
			matched = matched || strings.Contains(got, w)
		}
		if (tt.status != "" && c.Status != tt.status) || c.Status == codemode.StatusOK || !matched {
			t.Errorf("%s: status %s (%s), want %s containing %q", tt.name, c.Status, c.JSON(), tt.status, tt.want)
		}
		for _, s := range []string{"abuse", "bystander"} {
			if next := runCell(t, on, s, "[1, 2, 3].map(x => x * 2)"); next.Status != codemode.StatusOK || jsonText(resultOf(t, next)) != "[2,4,6]" {
				t.Fatalf("after %s, session %s: %s", tt.name, s, next.JSON())
			}
		}
	}
}

// TestSandbox_GlobalsAreOnlyStandardJavaScriptAndTheHandles is the allow
// list: nothing else (no host object) is reachable from the global scope
// but __cm_keys__, the read-only check compiled code calls before an object
// spread or rest (spreadkeys.go), which cell code cannot name.
func TestSandbox_GlobalsAreOnlyStandardJavaScriptAndTheHandles(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	c := runCell(t, cm, "s", `Object.getOwnPropertyNames(globalThis).sort()`)
	var got []string
	for _, v := range resultOf(t, c).([]any) {
		got = append(got, v.(string))
	}
	want := strings.Fields(`AggregateError Array Boolean Date Error EvalError Function Infinity JSON Map Math NaN Number
		Object Promise RangeError ReferenceError Reflect RegExp Set String Symbol SyntaxError TypeError URIError WeakMap WeakSet
		__cm_keys__ compare console decodeURI decodeURIComponent delete_all echo encodeURI encodeURIComponent escape eval get_weather
		globalThis isFinite isNaN parseFloat parseInt print results tools undefined unescape`)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("globals = %v\nwant      %v", got, want)
	}
	c = runCell(t, cm, "s", `[typeof process, typeof require, typeof setTimeout, typeof fetch, typeof Java, typeof Packages, typeof __go]`)
	if jsonText(resultOf(t, c)) != `["undefined","undefined","undefined","undefined","undefined","undefined","undefined"]` {
		t.Errorf("host names: %s", c.Result)
	}
}

func TestSandbox_DateIsFrozenAtTheCellStart(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	c := runCell(t, cm, "s", `const t0 = Date.now(); let spins = 0; while (Date.now() === t0 && spins < 200000) spins++; [spins, new Date().getTime() === t0]`)
	if jsonText(resultOf(t, c)) != "[200000,true]" {
		t.Fatalf("the clock moved within a cell: %s", c.Result)
	}
}

// TestSandbox_RestoringCarriedVariablesIsNotChargedToTheCell: after an
// abort, the next cell restores the session's variables first; that work
// has a budget of its own, so a trivial cell after a hostile one runs even
// when restoring took most of a CPU budget.
func TestSandbox_RestoringCarriedVariablesIsNotChargedToTheCell(t *testing.T) {
	const limit = 300 * time.Millisecond
	cm := newCM(t, codemode.Config{CPUTimeLimit: limit, CellTimeout: 10 * time.Minute})
	// Ten variables of 3,000 objects: restoring them all takes more than
	// the 300 ms budget under -race here, one of them far less.
	const n = 10
	for i := range n {
		c := runCell(t, cm, "s", fmt.Sprintf(`var v%d = Array.from({length: 3000}, (_, i) => ({i, s: "abcdefgh"}))`, i))
		if c.Status != codemode.StatusOK {
			t.Fatalf("building v%d: %s", i, c.JSON())
		}
	}
	if c := runCell(t, cm, "s", `while (true) {}`); c.Status != codemode.StatusAborted {
		t.Fatalf("busy loop: %s", c.JSON())
	}
	next := runCell(t, cm, "s", fmt.Sprintf("v%d.length", n-1))
	if next.Status != codemode.StatusOK || jsonText(resultOf(t, next)) != "3000" {
		t.Fatalf("the first cell after the abort (restoring %d variables): %s", n, next.JSON())
	}
}
