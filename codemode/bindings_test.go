package codemode_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/tool"
)

// TestHandles_TheEnvironmentsNamesCannotBeReplaced: code could assign a
// tool's handle (`echo = 5`, `let echo = 5`), console, print, tools,
// results or their members; the live kernel then held the code's value
// while a rebuilt or restored one held the tool again, so the same session
// disagreed with itself about what `echo` is. Every way of replacing one
// fails with a TypeError that names it, and the live, rebuilt and restored
// kernels all keep the tool.
func TestHandles_TheEnvironmentsNamesCannotBeReplaced(t *testing.T) {
	t.Parallel()
	d, _ := openSQLite(t)
	cfg := codemode.Config{Persist: true, DB: d, CPUTimeLimit: 300 * time.Millisecond}
	cm := newCM(t, cfg)
	cases := []struct{ code, name string }{
		{`echo = 5`, "echo"},
		{`let echo = 5`, "echo"},
		{`const echo = 5`, "echo"},
		{`var echo = 5`, "echo"},
		{`let [echo] = [5]`, "echo"},
		{`;({echo} = {echo: 5})`, "echo"},
		{`for (echo of [5]) {}`, "echo"},
		{`echo += 1`, "echo"},
		{`function echo() { return 5 }`, "echo"},
		{`class echo {}`, "echo"},
		{`globalThis.echo = 5`, "echo"},
		{`Object.defineProperty(globalThis, "echo", {value: 5})`, "echo"},
		{`Reflect.set(globalThis, "echo", 5) || (() => { throw new TypeError("echo: Reflect.set refused") })()`, "echo"},
		{`tools.echo = 5`, "echo"},
		{`tools["get_weather"] = 5`, "get_weather"},
		{`let console = 5`, "console"},
		{`console.log = () => 5`, "log"},
		{`print = 5`, "print"},
		{`tools = {}`, "tools"},
		{`results = 5`, "results"},
		{`results.get = 5`, "get"},
	}
	check := func(when string) {
		t.Helper()
		c := runCell(t, cm, "s", `[typeof echo, await echo({text: "hi"}), await tools.echo({text: "ho"}), typeof console.log, typeof print, typeof tools, typeof results.get]`)
		if got := jsonText(resultOf(t, c)); got != `["function","hi","ho","function","function","object","function"]` {
			t.Fatalf("%s: %s", when, c.JSON())
		}
	}
	for _, tt := range cases {
		c := runCell(t, cm, "s", tt.code)
		if c.Status != codemode.StatusError || c.Error.Name != "TypeError" || !strings.Contains(c.Error.Message, tt.name) {
			t.Errorf("%s: %s, want a TypeError naming %s", tt.code, c.JSON(), tt.name)
		}
		check("live, after " + tt.code)
	}
	if c := runCell(t, cm, "s", `let kept = 1`); c.Status != codemode.StatusOK || c.Notice != "" {
		t.Errorf("saving: %s (notice %q)", c.JSON(), c.Notice)
	}
	// An aborted cell rebuilds the runtime from the carried-over state.
	if c := runCell(t, cm, "s", `while (true) {}`); c.Status != codemode.StatusAborted {
		t.Fatalf("the loop: %s", c.JSON())
	}
	check("rebuilt")
	// Another CodeMode restores the saved state.
	cm = newCM(t, cfg)
	check("restored")
	if c := runCell(t, cm, "s", `kept`); jsonText(resultOf(t, c)) != "1" || strings.Contains(c.Notice, "could not restore") {
		t.Errorf("restored state: %s (notice %q)", c.JSON(), c.Notice)
	}
}

// TestPersist_NoticesListAFewVariablesAndCountTheRest: the notice of
// variables not saved named every one of them, as did the saved document,
// and a restore named every variable it restored: 10,000 Maps made a notice
// of about a megabyte for the model (100,000 made ten, and a document of
// eleven over the 4 MiB state limit). A notice names a few and counts the
// rest; the document keeps as few.
func TestPersist_NoticesListAFewVariablesAndCountTheRest(t *testing.T) {
	t.Parallel()
	d, _ := openSQLite(t)
	cfg := codemode.Config{Persist: true, DB: d, CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute}
	cm := newCM(t, cfg)
	const n = 10000
	c := runCell(t, cm, "s", `for (let i = 0; i < 10000; i++) { globalThis["m" + i] = new Map(); globalThis["v" + i] = i }`)
	wantOK(t, c)
	if len(c.Notice) > 4000 || !strings.Contains(c.Notice, "m0 (a Map") || !strings.Contains(c.Notice, "and 9980 more") {
		t.Errorf("notice of %d bytes, want a few names and a count: %.300q", len(c.Notice), c.Notice)
	}
	f, err := d.GetFile(context.Background(), codemode.DefaultNamespace, "sessions/s")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Content) > 400_000 {
		t.Errorf("the saved state is %d bytes for %d small numbers", len(f.Content), n)
	}
	cm = newCM(t, cfg)
	c = runCell(t, cm, "s", `v9999`)
	if jsonText(resultOf(t, c)) != "9999" || len(c.Notice) > 4000 || !strings.Contains(c.Notice, "restored 10000 variable(s)") || !strings.Contains(c.Notice, "and 9980 more") {
		t.Errorf("restore: %s, notice of %d bytes: %.300q", c.Result, len(c.Notice), c.Notice)
	}
}

// TestPersist_RestoringCallsNoTool: restoring a class runs its static
// blocks, and one that called a tool called it again at every restore (each
// rebuild after an abort, each new process), a side effect the model did
// not ask for. Tools called while the state is restored are refused; the
// class is restored.
func TestPersist_RestoringCallsNoTool(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	tick := tool.MustFunc(tool.FuncConfig{Name: "tick", Description: "Counts."},
		func(context.Context, struct{}) (int32, error) { return calls.Add(1), nil })
	d, _ := openSQLite(t)
	cfg := codemode.Config{Persist: true, DB: d, Tools: []tool.Tool{tick}, CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute}
	cm := newCM(t, cfg)
	// The loop gives the call time to start: a call that had not reached
	// the tool when the restore ended was cancelled with it.
	wantOK(t, runCell(t, cm, "s", `class Once { static { tick(); for (let i = 0; i < 3e6; i++) {} } }`))
	if n := calls.Load(); n != 1 {
		t.Fatalf("the cell called tick %d times", n)
	}
	// Rebuilt after an abort, and restored by another CodeMode.
	// (Aborted for its depth: a memory abort's allocations would be
	// charged to the parallel tests' cells.)
	if c := runCell(t, cm, "s", `(function f() { f() })()`); c.Status != codemode.StatusAborted {
		t.Fatalf("the loop: %s", c.JSON())
	}
	if c := runCell(t, cm, "s", `typeof Once`); jsonText(resultOf(t, c)) != `"function"` {
		t.Errorf("rebuilt: %s", c.JSON())
	}
	cm = newCM(t, cfg)
	if c := runCell(t, cm, "s", `typeof Once`); jsonText(resultOf(t, c)) != `"function"` {
		t.Errorf("restored: %s", c.JSON())
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("tick was called %d times, want once (by the cell)", n)
	}
}
