package codemode_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/tool"
)

// allocated runs code as a cell of session "s" and returns the cell and
// the bytes the process allocated meanwhile.
func allocated(t *testing.T, cm *codemode.CodeMode, code string) (codemode.Cell, uint64) {
	t.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := runCell(t, cm, "s", code)
	runtime.ReadMemStats(&after)
	return c, after.TotalAlloc - before.TotalAlloc
}

// TestSandbox_ObjectSpreadAndRestOfAHugeValueAreRefused: object spread
// and rest copy every own key of their source in one Go loop, and a
// string has a key per character: `{...s}` of a string within the string
// limit held 380 MiB and `const {...r} = s` 640 MiB for 15 and 26 s under
// a 16 MiB limit. Like Object.assign, a source with more keys than one
// copy may make is refused, in a cell and in a function restored from its
// source; the function's source stays the code's own. Not parallel: it
// measures the process's allocations.
func TestSandbox_ObjectSpreadAndRestOfAHugeValueAreRefused(t *testing.T) {
	const limit = 16 << 20
	cm := newCM(t, codemode.Config{MemoryLimit: limit, CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute})
	const setup = `const s = "x".repeat(2e6), a = new Array(1e5).fill(0); `
	for _, code := range []string{
		`Object.keys({...s}).length`,
		`({a: 1, ...a})`,
		`const {...r} = s`,
		`const {length, ...r} = s`,
		`let r; ({x: r, ...r} = s)`,
		`function f() { const {...r} = s; return r } f()`,
		`(() => ({...s}))()`,
	} {
		c, grown := allocated(t, cm, setup+code)
		if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, "over the sandbox's limit") {
			t.Errorf("%s: %.300s, want refused for the sandbox's limit", code, c.JSON())
		}
		if grown > 4*limit {
			t.Errorf("%s allocated %d MiB, over 4 times the %d MiB limit", code, grown>>20, limit>>20)
		}
	}
	c := runCell(t, cm, "s", `const o = {a: 1, b: 2}; const {a, ...rest} = o; let q; ({b: q, ...q} = o);
		function spread(x) { return {...x, z: 0} }
		[rest, {...o, c: 3}, q, spread("ab"), {..."xy"}, {...null}, String(spread)]`)
	if got := jsonText(resultOf(t, c)); got != `[{"b":2},{"a":1,"b":2,"c":3},{"a":1},{"0":"a","1":"b","z":0},{"0":"x","1":"y"},{},"function spread(x) { return {...x, z: 0} }"]` {
		t.Errorf("below the limits: %s", got)
	}
	// A function restored from its source (after an abort) is checked too.
	// The CPU limit ends the busy loop that makes the abort; the cell after
	// it rebuilds the environment and builds a 2 MB string before the
	// check refuses it, which under -race on a loaded machine took more
	// than 200 ms of CPU (the cell was aborted for the CPU limit instead).
	short := newCM(t, codemode.Config{MemoryLimit: limit, CPUTimeLimit: 2 * time.Second, CellTimeout: 10 * time.Minute})
	wantOK(t, runCell(t, short, "s", `function spread(x) { return {...x} }`))
	if c := runCell(t, short, "s", `while (true) {}`); c.Status != codemode.StatusAborted {
		t.Fatalf("busy loop: %s", c.JSON())
	}
	c = runCell(t, short, "s", `spread("x".repeat(2e6))`)
	if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, "over the sandbox's limit") {
		t.Errorf("restored function: %.300s, want refused for the sandbox's limit", c.JSON())
	}
	if got := jsonText(resultOf(t, runCell(t, short, "s", `[spread("ab"), String(spread)]`))); got != `[{"0":"a","1":"b"},"function spread(x) { return {...x} }"]` {
		t.Errorf("restored function below the limits: %s", got)
	}
}

// TestSandbox_BuiltinIteratorsStopWhenALimitAborts: goja consumes an
// iterable (spread, rest, Array.from, new Set, Promise.all) in a Go loop
// that never looks at the interrupt, so a limit could only stop the cell
// once the loop ended. Every arguments object holds the original array
// iterator, which the sandbox's check of Array.prototype[Symbol.iterator]
// does not see: spreading a sparse array of 20 million holes with it ran
// to the end, allocating gigabytes, before the memory limit was noticed.
// Each step of a built-in iterator now ends an aborted cell. Not
// parallel: it measures the process's allocations.
func TestSandbox_BuiltinIteratorsStopWhenALimitAborts(t *testing.T) {
	const limit = 16 << 20
	cm := newCM(t, codemode.Config{MemoryLimit: limit, CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute})
	const original = `function values() { return arguments[Symbol.iterator] } const a = []; a.length = 2e7; a[Symbol.iterator] = values(); `
	for _, code := range []string{
		original + `[...a].length`,
		original + `const [x, ...rest] = a`,
		original + `Array.from(a).length`,
		original + `Array.prototype[Symbol.iterator] = a[Symbol.iterator]; const b = []; b.length = 2e7; [...b].length`,
	} {
		c, grown := allocated(t, cm, code)
		if c.Status != codemode.StatusAborted || c.Error.Reason != codemode.ReasonMemory {
			t.Errorf("%s: %.300s, want aborted for %s", code, c.JSON(), codemode.ReasonMemory)
		}
		// Mostly garbage: every step makes an iterator result. Run to
		// the end it is 20 million of them, over 10 GB.
		if grown > 64*limit {
			t.Errorf("%s allocated %d MiB before it was stopped, over 64 times the %d MiB limit", code, grown>>20, limit>>20)
		}
	}
	// Strings and arrays longer than the array limit are refused before
	// any step, whatever consumes them.
	for _, code := range []string{`[..."x".repeat(2e6)]`, `Array.from("x".repeat(2e6))`, `const [c, ...rest] = "x".repeat(2e6)`,
		`new Set("x".repeat(2e6))`, `Math.max(..."1".repeat(2e6))`, `Object.fromEntries(new Array(2e6))`} {
		c, grown := allocated(t, cm, code)
		if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, "over the sandbox's limit") {
			t.Errorf("%s: %.300s, want refused for the sandbox's limit", code, c.JSON())
		}
		if grown > 4*limit {
			t.Errorf("%s allocated %d MiB, over 4 times the %d MiB limit", code, grown>>20, limit>>20)
		}
	}
	c := runCell(t, cm, "s", `function f() { return [...arguments] } const m = new Map([[1, "a"]]);
		[[..."ab"], [...f(1, 2)], Array.from(new Set([3, 3, 4])), [...m.keys()], [..."a1b2".matchAll(/\d/g)].map(x => x[0])]`)
	if got := jsonText(resultOf(t, c)); got != `[["a","b"],[1,2],[3,4],[1],["1","2"]]` {
		t.Errorf("below the limits: %s", got)
	}
}

// TestSandbox_CollectionConstructorsAreBounded: new Set, Map, WeakSet and
// WeakMap add every element of their argument in a Go loop, about 200
// bytes an entry: new Set(a) of an array within the array limit held 150
// MiB over a 64 MiB limit before the cell could be stopped, and with the
// original array iterator Set skips the iterator's steps altogether. An
// array or a string with more elements than one call may add is refused;
// the constructors still behave as JavaScript's (subclasses, new.target,
// name, length, species). Not parallel: it measures the process's
// allocations.
func TestSandbox_CollectionConstructorsAreBounded(t *testing.T) {
	const limit = 16 << 20
	cm := newCM(t, codemode.Config{MemoryLimit: limit, CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute})
	const setup = `const a = new Array(2.5e5).fill(0).map((_, i) => i); function values() { return arguments[Symbol.iterator] } `
	for _, code := range []string{
		`new Set(a).size`,
		`new Set("x".repeat(1e5)).size`,
		`new Map(a.fill([1, 2])).size`,
		`a[Symbol.iterator] = values(); new Set(a).size`,
		`const o = {}; new WeakSet(a.fill(o))`,
		`const p = [{}, 1]; new WeakMap(a.fill(p))`,
		`class S extends Set {}; new S(a)`,
	} {
		c, grown := allocated(t, cm, setup+code)
		if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, "over the sandbox's limit") {
			t.Errorf("%s: %.300s, want refused for the sandbox's limit", code, c.JSON())
		}
		if grown > 8*limit {
			t.Errorf("%s allocated %d MiB, over 8 times the %d MiB limit", code, grown>>20, limit>>20)
		}
	}
	c := runCell(t, cm, "s", `class S extends Set { sum() { let n = 0; for (const x of this) n += x; return n } }
		class M extends Map { constructor(e) { super(e); this.tag = "m" } }
		const s = new S([1, 2, 2]), m = new M([["k", 1]]);
		let plain = ""; try { Set() } catch (e) { plain = e.name + ": " + e.message }
		[s.sum(), s instanceof Set, s.constructor === S, m.get("k"), m.tag, new Set("aab").size, Set.name, Set.length, Map.length,
		 Set[Symbol.species] === Set, Set.prototype.constructor === Set, new Set().constructor === Set,
		 Object.getPrototypeOf(new Map()) === Map.prototype, new WeakSet([s]).has(s), new WeakMap([[m, 1]]).get(m), plain]`)
	if got := jsonText(resultOf(t, c)); got != `[3,true,true,1,"m",2,"Set",0,0,true,true,true,true,true,1,"TypeError: Constructor Set requires 'new'"]` {
		t.Errorf("below the limits: %s", got)
	}
}

// TestSandbox_JSONParseOfManySmallValuesIsRefused: a parse allocates per
// value, not per character, in one Go call: "{}," 2.6 million times (within
// the string limit) made 687 MiB of objects. A text whose values would take
// more than the memory limit is refused; a tool's result like it stays a
// string. Not parallel: it measures the process's allocations.
func TestSandbox_JSONParseOfManySmallValuesIsRefused(t *testing.T) {
	const limit = 16 << 20
	many := tool.MustFunc(tool.FuncConfig{Name: "many", Description: "Many empty objects."},
		func(context.Context, struct{}) ([]struct{}, error) { return make([]struct{}, 6e5), nil })
	cm := newCM(t, codemode.Config{MemoryLimit: limit, CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute,
		Tools: []tool.Tool{many}, MaxResultBytes: 4 << 20})
	for _, code := range []string{
		`JSON.parse("[" + "{},".repeat(6e5) + "{}]").length`,
		`JSON.parse("[" + "[],".repeat(6e5) + "[]]").length`,
		`JSON.parse("[" + "0,".repeat(9e5) + "0]").length`,
	} {
		c, grown := allocated(t, cm, code)
		if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, "over the sandbox's limit") {
			t.Errorf("%s: %.300s, want refused for the sandbox's limit", code, c.JSON())
		}
		if grown > 4*limit {
			t.Errorf("%s allocated %d MiB, over 4 times the %d MiB limit", code, grown>>20, limit>>20)
		}
	}
	c := runCell(t, cm, "s", `const r = await many({});
		[typeof r, r.length, JSON.parse("[" + "{},".repeat(1e3) + "{}]").length, JSON.parse('{"a": [1, "x", {"b": null}]}')]`)
	if got := jsonText(resultOf(t, c)); got != `["string",1800001,1001,{"a":[1,"x",{"b":null}]}]` {
		t.Errorf("below the limits: %s", got)
	}
}
