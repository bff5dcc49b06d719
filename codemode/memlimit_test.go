package codemode_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/codemode"
)

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
