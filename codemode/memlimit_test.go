package codemode_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
)

// TestSandbox_MemoryLimitStopsAStringDoublingLoopPromptly: `+` is not a
// builtin the sandbox can check, so only the heap watcher stops a string
// doubling loop; it must stop it as a memory abort soon after the limit is
// crossed, not after the process grew by gigabytes. A doubling loop
// allocates about twice its last string; the watcher stops it with that
// string at two, under load four, times the limit (one doubling under way
// when the abort lands), so the cell and the rebuild after it allocate at
// most about ten times the limit. The bound here leaves room for a machine
// so loaded that the watcher runs late. Not parallel: it measures the
// process's allocations.
func TestSandbox_MemoryLimitStopsAStringDoublingLoopPromptly(t *testing.T) {
	const limit = 16 << 20
	cm := newCM(t, codemode.Config{MemoryLimit: limit, CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute})
	wantOK(t, runCell(t, cm, "s", "1")) // the interpreter exists before measuring
	for range 3 {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := runCell(t, cm, "s", `let s = "x"; while (true) s += s`)
		runtime.ReadMemStats(&after)
		if c.Status != codemode.StatusAborted || c.Error == nil || c.Error.Reason != codemode.ReasonMemory {
			t.Fatalf("string doubling: %s, want aborted for %s", c.JSON(), codemode.ReasonMemory)
		}
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 20*limit {
			t.Errorf("the cell allocated %d MiB before it was stopped, over 20 times the %d MiB limit", grown>>20, limit>>20)
		}
		wantOK(t, runCell(t, cm, "s", "1 + 1"))
	}
}

// TestPersist_AStringOverTheVariableLimitIsRefusedWithoutACopy: saving the
// session's state after every cell must not copy a long string (to quote it
// as JSON) only to find it over the variable limit: a 32 MiB string cost
// 32 MiB of garbage per cell, outside any cell's memory limit. Not
// parallel: it measures the process's allocations.
func TestPersist_AStringOverTheVariableLimitIsRefusedWithoutACopy(t *testing.T) {
	d, _ := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d, MemoryLimit: 512 << 20})
	c := runCell(t, cm, "s", `var big = "x".repeat(2 ** 25); big.length`)
	wantOK(t, c)
	if !strings.Contains(c.Notice, "big (over the") {
		t.Fatalf("the model was not told big is not saved: %q", c.Notice)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	wantOK(t, runCell(t, cm, "s", "big.length"))
	runtime.ReadMemStats(&after)
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 8<<20 {
		t.Errorf("a cell reading a 32 MiB string allocated %d MiB", grown>>20)
	}
}
