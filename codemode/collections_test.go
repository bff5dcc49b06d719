package codemode_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
)

// TestSandbox_BuiltinsThatMakeAnObjectPerElementAreBounded: Object.keys,
// entries and their kin make a key, an entry or a descriptor for every own
// key of their argument, and Promise.all and its kin a promise and its
// reactions for every element, in one call the interrupt cannot stop. A
// string has a key per character, so Object.entries of a string within the
// sandbox's string limit (8 million characters) allocated 5.9 GB, and
// Promise.all of an array within the array limit (a million elements) 4.7
// GB for 54 s with a CPU limit of 5 s. They are refused past limits derived
// from the memory limit, and work below them. Not parallel: it measures the
// process's allocations.
func TestSandbox_BuiltinsThatMakeAnObjectPerElementAreBounded(t *testing.T) {
	const limit = 16 << 20
	cm := newCM(t, codemode.Config{MemoryLimit: limit, CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute})
	// An aborted cell's variables this large are not carried over: each
	// cell makes its own.
	const setup = `const str = "x".repeat(2e6), arr = Array.from({length: 2e4}, (_, i) => i), obj = new String(str); `
	refused := []string{
		`Object.keys(str)`, `Object.values(str)`, `Object.entries(str)`, `Object.getOwnPropertyNames(str)`,
		`Object.getOwnPropertyDescriptors(str)`, `Reflect.ownKeys(obj)`, `Object.assign({}, 1, str)`,
		`Object.freeze(obj)`, `Object.seal(obj)`,
		`Object.entries(arr)`, `Object.keys(arr)`, `Object.getOwnPropertyDescriptors(arr)`,
		`Promise.all(arr)`, `Promise.allSettled(arr)`, `Promise.any(arr)`, `Promise.race(arr)`, `Promise.race(str)`,
	}
	for _, code := range refused {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := runCell(t, cm, "s", setup+code)
		runtime.ReadMemStats(&after)
		if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, "over the sandbox's limit") {
			t.Errorf("%s: %.300s, want refused for the sandbox's limit", code, c.JSON())
		}
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 4*limit {
			t.Errorf("%s allocated %d MiB, over 4 times the %d MiB limit", code, grown>>20, limit>>20)
		}
	}
	c := runCell(t, cm, "s", `[Object.keys("abc"), Object.entries([5, 6]), (await Promise.all([1, echo({text: "a"})])),
		Object.isFrozen(Object.freeze(new String("ab"))), Object.keys(Object.assign({}, "ab", [1])), Object.keys({length: 1e9})]`)
	if got := jsonText(resultOf(t, c)); got != `[["0","1","2"],[["0",5],["1",6]],[1,"a"],true,["0","1"],["length"]]` {
		t.Errorf("below the limits: %s", c.JSON())
	}
}

// TestRun_ConsoleLogRendersNoMoreThanTheOutputCap: console.log rendered
// every argument up to the output cap before joining them and cutting the
// line, so one call spread over 20,000 long strings allocated 7 GB for 12 s
// under a 5 s CPU limit, and the cell ended ok. It renders what still fits.
// Not parallel: it measures the process's allocations.
func TestRun_ConsoleLogRendersNoMoreThanTheOutputCap(t *testing.T) {
	cm := newCM(t, codemode.Config{CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute})
	wantOK(t, runCell(t, cm, "s", "1"))
	for _, arg := range []string{`"é".repeat(20000)`, `["é".repeat(20000)]`} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := runCell(t, cm, "s", `const a = new Array(5000).fill(`+arg+`); console.log(...a); console.log("after"); 1`)
		runtime.ReadMemStats(&after)
		wantOK(t, c)
		if !c.Truncated || len(c.Stdout) > codemode.DefaultMaxOutputChars || strings.Contains(c.Stdout, "after") {
			t.Errorf("%s: stdout of %d bytes, truncated %v", arg, len(c.Stdout), c.Truncated)
		}
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 32<<20 {
			t.Errorf("console.log of 5000 copies of %s allocated %d MiB", arg, grown>>20)
		}
	}
}
