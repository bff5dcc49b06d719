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

// TestPersist_SavingRunsCodeUnderTheCellsLimitsAndCallsNoTool: saving the
// variables after a successful cell runs their toJSON methods and getters.
// That code called tools (which ran outside any cell, again at every save,
// their results unread) and had no memory limit (a toJSON grew the heap by
// 379 MiB with a limit of 16 MiB, and the cell said nothing).
func TestPersist_SavingRunsCodeUnderTheCellsLimitsAndCallsNoTool(t *testing.T) {
	d, _ := openSQLite(t)
	var calls atomic.Int32
	send := tool.MustFunc(tool.FuncConfig{Name: "send", Description: "Sends a message."},
		func(context.Context, struct{}) (string, error) { calls.Add(1); return "sent", nil })
	cm := newCM(t, codemode.Config{Persist: true, DB: d, Tools: []tool.Tool{send}, MemoryLimit: 16 << 20,
		CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute})

	t.Run("tools", func(t *testing.T) {
		// The toJSON leaves time for a call that was started to reach the tool.
		c := runCell(t, cm, "tools", `globalThis.x = {toJSON() { send(); let n = 0; for (let i = 0; i < 1e6; i++) n += i; return n }}; 1`)
		wantOK(t, c)
		time.Sleep(100 * time.Millisecond)
		if n := calls.Load(); n != 0 {
			t.Fatalf("the save called the tool %d times", n)
		}
		c = runCell(t, cm, "tools", `globalThis.why = ""; globalThis.y = {toJSON() { send().catch(e => { why = e.message }); return 1 }}; 2`)
		wantOK(t, c)
		if got := resultOf(t, runCell(t, cm, "tools", `why`)); !strings.Contains(got.(string), "cannot be called while the session's state is saved") {
			t.Fatalf("the rejected call said %q", got)
		}
		if got := resultOf(t, runCell(t, cm, "tools", `await send()`)); got != "sent" || calls.Load() != 1 {
			t.Fatalf("a call in a cell: %v, %d calls", got, calls.Load())
		}
	})
	t.Run("memory", func(t *testing.T) {
		c := runCell(t, cm, "memory", `globalThis.keep = []; globalThis.big = {toJSON() { for (let i = 0; i < 300; i++) keep.push("x".repeat(1e6) + i); return 1 }}; 1`)
		if !strings.Contains(c.Notice, "could not be saved") || !strings.Contains(c.Notice, "memory limit") {
			t.Fatalf("status %s, notice %q: want the save stopped by the memory limit", c.Status, c.Notice)
		}
		if got := resultOf(t, runCell(t, cm, "memory", `delete globalThis.big; keep.length < 300`)); got != true {
			t.Fatalf("the toJSON ran to its end: %v", got)
		}
	})
}
