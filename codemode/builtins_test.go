package codemode_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
)

// TestSandbox_ChangedBuiltinsBreakNeitherToolCallsNorTheSandbox: a cell may
// change JavaScript's own globals and prototypes; the change is the
// session's until its environment is rebuilt (docs/adr/codemode-mutable-
// builtins.md). The sandbox's own work must not read them: a tool's failure
// is still a ToolError (a setter on Error.prototype.name took the name the
// sandbox assigned, so `e.name` read "Hijacked"), JSON.stringify's wrapper
// object holds the value (a setter for "" on Object.prototype took it),
// results still parse and render, the limits and their checks still hold,
// and the rebuilt environment is JavaScript's again.
func TestSandbox_ChangedBuiltinsBreakNeitherToolCallsNorTheSandbox(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{MemoryLimit: 16 << 20, CPUTimeLimit: 300 * time.Millisecond, CellTimeout: 10 * time.Minute})
	wantOK(t, runCell(t, cm, "s", `const stringify = JSON.stringify, keep = {kept: true};
		Object.defineProperty(Error.prototype, "name", {get() { return "Hijacked" }, set(v) {}, configurable: true});
		Object.defineProperty(Object.prototype, "", {get() { return "hijacked" }, set(v) {}, configurable: true});
		JSON.parse = () => "fake"; JSON.stringify = () => "fake";
		Function.prototype.call = Function.prototype.apply = Function.prototype.bind = null;
		Reflect.construct = Reflect.apply = Reflect.ownKeys = null;
		Object.defineProperty = Object.getOwnPropertyDescriptor = Object.keys = Object.preventExtensions = null;
		Error = TypeError = RangeError = Symbol = Promise = undefined;
		String.prototype.toString = String.prototype.valueOf = Array.prototype.push = Array.prototype.join = null;
		globalThis["__cm_" + "keys__"] = x => x; 1`))
	c := runCell(t, cm, "s", `let failed; try { await get_weather({city: "Nowhere"}) } catch (e) { failed = [e.name, e.message] }
		const w = await get_weather({city: "Paris"});
		console.log("weather", w);
		let spread = "", big = "";
		try { ({..."x".repeat(2e6)}) } catch (e) { spread = e.message }
		try { "x".repeat(1e9) } catch (e) { big = e.message }
		[failed, w, stringify(5, function (k, v) { return k === "" ? [this[""]] : v }), new Set([1, 1]).size, typeof results.read, spread, big]`)
	got := resultOf(t, c).([]any)
	if want := `[["ToolError","no weather for Nowhere"],{"city":"Paris","temp_c":21.5},"[5]",1,"function"]`; jsonText(got[:5]) != want {
		t.Errorf("after changing the builtins: %s\nwant %s", jsonText(got[:5]), want)
	}
	for i, what := range []string{"object spread", "repeat"} {
		if s, _ := got[5+i].(string); !strings.Contains(s, "over the sandbox's limit") {
			t.Errorf("%s after changing the builtins: %q, want refused for the sandbox's limit", what, s)
		}
	}
	if !strings.Contains(c.Stdout, `weather {"city":"Paris","temp_c":21.5}`) {
		t.Errorf("stdout %q", c.Stdout)
	}
	if c := runCell(t, cm, "s", `while (true) {}`); c.Status != codemode.StatusAborted || !strings.Contains(c.Error.Message, "built-in objects") {
		t.Fatalf("busy loop: %s, want aborted saying built-in objects are reset", c.JSON())
	}
	c = runCell(t, cm, "s", `[keep, JSON.parse("[1]"), typeof Function.prototype.call, Error.name, typeof Promise, Object.getOwnPropertyDescriptor(Error.prototype, "name").value]`)
	if got, want := jsonText(resultOf(t, c)), `[{"kept":true},[1],"function","Error","function","Error"]`; got != want {
		t.Errorf("after the rebuild: %s, want %s", got, want)
	}
}
