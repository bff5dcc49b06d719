package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/db"
)

// putSnapshot stores a saved state for session as a server would find it.
func putSnapshot(t *testing.T, d *db.DB, session string, vars ...map[string]any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"version": 1, "session_id": session, "vars": vars})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.PutFile(context.Background(), &db.File{Namespace: codemode.DefaultNamespace, Path: "sessions/" + session, Content: b}); err != nil {
		t.Fatal(err)
	}
}

// TestPersist_RestoringRunsSavedCodeOnOneCPUBudget: a class's static blocks
// run when its saved source is evaluated. Each variable was restored on a
// CPU budget of its own, so a saved state of many classes each just under
// the limit ran for their sum. The code a restore runs shares one budget; a
// state over it is refused, the environment starts empty with a notice
// saying why, and the cell runs.
func TestPersist_RestoringRunsSavedCodeOnOneCPUBudget(t *testing.T) {
	d, _ := openSQLite(t)
	cfg := codemode.Config{Persist: true, DB: d, CPUTimeLimit: 300 * time.Millisecond, CellTimeout: 10 * time.Minute}
	cm := newCM(t, cfg)
	// How many steps of the loop below fit in the budget: the aborted
	// cell's n is carried over.
	c := runCell(t, cm, "calibrate", `var n = 0; for (let k = 0; ; k++) if ((k & 1023) === 0) n = k`)
	if c.Status != codemode.StatusAborted || c.Error.Reason != codemode.ReasonCPUTime {
		t.Fatalf("calibration: %s", c.JSON())
	}
	steps := int(resultOf(t, runCell(t, cm, "calibrate", "n")).(float64))
	if steps < 1024 {
		t.Fatalf("calibration: %d steps", steps)
	}
	// Six classes whose static blocks each take half the budget, and a
	// value: restoring all of it would take three budgets.
	vars := []map[string]any{{"name": "kept", "json": json.RawMessage(`{"a":1}`)}}
	for i := range 6 {
		vars = append(vars, map[string]any{"name": fmt.Sprintf("C%d", i),
			"source": fmt.Sprintf("class C%d { static { let m = 0; for (let k = 0; k < %d; k++) if ((k & 1023) === 0) m = k } }", i, steps/2)})
	}
	putSnapshot(t, d, "s", vars...)
	c = runCell(t, cm, "s", "[typeof kept, typeof C0, typeof C5]")
	if got := jsonText(resultOf(t, c)); got != `["undefined","undefined","undefined"]` {
		t.Errorf("restored %s (%s), want nothing", got, c.JSON())
	}
	if !strings.Contains(c.Notice, "not restored") || !strings.Contains(c.Notice, "CPU time limit") {
		t.Errorf("notice %q, want the state refused for the CPU time limit", c.Notice)
	}
	wantOK(t, runCell(t, cm, "s", "let after = 2"))
	cm.Close()
	cm2 := newCM(t, cfg)
	if c := runCell(t, cm2, "s", "after"); jsonText(resultOf(t, c)) != "2" {
		t.Errorf("the state saved after the refusal: %s", c.JSON())
	}
	// A state within the budget is restored, static blocks and all. Its
	// block takes an eighth of the calibrated budget, not half: a thread's
	// CPU clock also counts the GC assists its allocations are charged,
	// which vary with what else the process and the machine run (half
	// the budget was refused once under a parallel -race load).
	putSnapshot(t, d, "small", vars[0], map[string]any{"name": "C0",
		"source": fmt.Sprintf("class C0 { static { let m = 0; for (let k = 0; k < %d; k++) if ((k & 1023) === 0) m = k } }", steps/8)})
	c = runCell(t, cm2, "small", "[kept.a, typeof C0]")
	if got := jsonText(resultOf(t, c)); got != `[1,"function"]` {
		t.Errorf("restored %s (%s)", got, c.JSON())
	}
}

// TestPersist_RestoringAStaticBlockThatNeverEndsIsRefused: restoring ran on
// the first cell's own run, so a saved static block that loops aborted that
// cell as cpu_time. The state is refused instead and the cell runs.
func TestPersist_RestoringAStaticBlockThatNeverEndsIsRefused(t *testing.T) {
	t.Parallel()
	d, _ := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d, CPUTimeLimit: 200 * time.Millisecond, CellTimeout: 10 * time.Minute})
	putSnapshot(t, d, "s", map[string]any{"name": "Loop", "source": "class Loop { static { while (true) {} } }"})
	c := runCell(t, cm, "s", "[typeof Loop, 1 + 1]")
	if got := jsonText(resultOf(t, c)); got != `["undefined",2]` || !strings.Contains(c.Notice, "not restored") {
		t.Fatalf("cell after a looping saved state: %s", c.JSON())
	}
	wantOK(t, runCell(t, cm, "s", "2 + 2"))
}

// TestPersist_ARunCancelledWhileItsStateIsRestoredKeepsIt: a first cell
// whose run is cancelled while the saved state is restored must leave the
// state for the next cell. It was taken for restored: the next cell started
// empty and its save wrote the empty state over the saved one.
func TestPersist_ARunCancelledWhileItsStateIsRestoredKeepsIt(t *testing.T) {
	t.Parallel()
	d, _ := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d, CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute})
	// Date is frozen at a cell's start: the static block spins until the
	// run is cancelled when the cell starts before until, and does
	// nothing after it. A cancel that lands before the restore (while the
	// state is read, slow on a loaded machine) fails the run with the
	// context's error and leaves the state unread: the run is tried again
	// with a later cancel.
	var until time.Time
	for delay := 100 * time.Millisecond; ; delay *= 2 {
		until = time.Now().Add(delay + 3*time.Second)
		putSnapshot(t, d, "s",
			map[string]any{"name": "Waiter", "source": fmt.Sprintf("class Waiter { static { while (Date.now() < %d) {} } }", until.UnixMilli())},
			map[string]any{"name": "kept", "json": json.RawMessage(`[1,2]`)})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(delay, cancel)
		c, err := cm.Run(ctx, "s", "", "1")
		if errors.Is(err, context.Canceled) && delay < time.Minute {
			continue
		}
		if err != nil || c.Status != codemode.StatusAborted || c.Error.Reason != codemode.ReasonCancelled {
			t.Fatalf("cancelled run: %s, %v", c.JSON(), err)
		}
		break
	}
	time.Sleep(time.Until(until))
	c := runCell(t, cm, "s", "[typeof Waiter, kept]")
	if got := jsonText(resultOf(t, c)); got != `["function",[1,2]]` {
		t.Fatalf("after the cancelled run: %s", c.JSON())
	}
}

// TestPersist_ASavedVariableNamedLikeAToolDoesNotReplaceIt: a saved variable
// named like a tool's handle (a global the code defined over it, or a tool
// added since the save) replaced the handle when restored. It is skipped
// with its reason.
func TestPersist_ASavedVariableNamedLikeAToolDoesNotReplaceIt(t *testing.T) {
	t.Parallel()
	d, _ := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d})
	putSnapshot(t, d, "s",
		map[string]any{"name": "echo", "json": json.RawMessage(`"shadow"`)},
		map[string]any{"name": "get_weather", "source": "function get_weather() { return 'fake' }"},
		map[string]any{"name": "kept", "json": json.RawMessage(`1`)})
	c := runCell(t, cm, "s", `[typeof echo, await echo({text: "hi"}), (await get_weather({city: "Oslo"})).temp_c, kept]`)
	if got := jsonText(resultOf(t, c)); got != `["function","hi",9,1]` {
		t.Fatalf("after restoring variables named like tools: %s", c.JSON())
	}
	for _, want := range []string{"restored 1 variable(s)", "could not restore: echo (the name of a tool", "get_weather (the name of a tool"} {
		if !strings.Contains(c.Notice, want) {
			t.Errorf("notice %q lacks %q", c.Notice, want)
		}
	}
	// Nor can code define a global over a handle (see
	// TestHandles_TheEnvironmentsNamesCannotBeReplaced).
	c = runCell(t, cm, "s", `Object.defineProperty(globalThis, "compare", {value: 7, enumerable: true, writable: true, configurable: true}); compare`)
	if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, "compare") {
		t.Errorf("defining compare over its handle: %s", c.JSON())
	}
}

// TestPersist_ErrorsInRestoredFunctionsGiveTheirOwnPositions: a restored
// function's frames read "snapshot:line:column(pc)", every variable under
// the same name, the first line's column shifted by the wrapper, columns in
// bytes, and a restored arrow function had lost its name. They read
// "saved[name]:line:column" in the function's own source, columns in
// UTF-16 code units as in cells.
func TestPersist_ErrorsInRestoredFunctionsGiveTheirOwnPositions(t *testing.T) {
	t.Parallel()
	d, path := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d})
	wantOK(t, runCell(t, cm, "s", "function f(x) {\n  const e = 'é😀'; return x.y.z\n}\nconst g = (a) => {\n  return f(a)\n}\nconst h = (a) => a.b.c"))
	before := runCell(t, cm, "s", "g({})").Error
	cm.Close()
	cm2 := newCM(t, codemode.Config{Persist: true, DB: reopen(t, path)})
	after := runCell(t, cm2, "s", "g({})").Error
	if before == nil || after == nil {
		t.Fatalf("g({}) did not fail: before %v, after %v", before, after)
	}
	want := strings.NewReplacer("cell[1]:2:", "saved[f]:2:", "cell[1]:5:", "saved[g]:2:", "cell[2]:", "cell[1]:").Replace(before.Stack)
	if !strings.Contains(before.Stack, "at f (cell[1]:2:") || after.Stack != want {
		t.Errorf("stack after the restore:\n%s\nwant (from the stack before it)\n%s", after.Stack, want)
	}
	// An error on a restored function's first line.
	c := runCell(t, cm2, "s", "h({})")
	if c.Error == nil || !strings.Contains(c.Error.Stack, "at h (saved[h]:1:12)") {
		t.Errorf("h({}): %s", c.JSON())
	}
}

// TestPersist_ASavedSourceIsOneFunctionOrClass: a saved source is evaluated
// inside a wrapper; one that closes the wrapper and adds code of its own
// is refused, its code not run.
func TestPersist_ASavedSourceIsOneFunctionOrClass(t *testing.T) {
	t.Parallel()
	d, _ := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d})
	putSnapshot(t, d, "s",
		map[string]any{"name": "f", "source": `function () {}}), (globalThis.injected = 1), ({["f"]: 0`},
		map[string]any{"name": "g", "source": `function () {}, [(globalThis.injected = 2)]: 0`},
		map[string]any{"name": "ok", "source": `class ok extends Array {}`})
	c := runCell(t, cm, "s", "[typeof injected, typeof f, typeof g, typeof ok]")
	if got := jsonText(resultOf(t, c)); got != `["undefined","undefined","undefined","function"]` {
		t.Errorf("restored %s (%s)", got, c.JSON())
	}
	if !strings.Contains(c.Notice, "could not restore: f (") || !strings.Contains(c.Notice, "g (") {
		t.Errorf("notice %q", c.Notice)
	}
}

// TestPersist_AGlobalThatIsNotANameIsNotSaved: a global property that is
// not an identifier (globalThis["a b"]) was saved, and every restore then
// reported it could not be restored. It is left out when saving, with the
// reason.
func TestPersist_AGlobalThatIsNotANameIsNotSaved(t *testing.T) {
	t.Parallel()
	d, path := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d})
	c := runCell(t, cm, "s", `globalThis["a b"] = 2; globalThis["é"] = 3; var fine = 1`)
	if !strings.Contains(c.Notice, "not saved with the session's state: a b (") || !strings.Contains(c.Notice, "é (") {
		t.Errorf("notice %q, want a b and é not saved", c.Notice)
	}
	cm.Close()
	cm2 := newCM(t, codemode.Config{Persist: true, DB: reopen(t, path)})
	c = runCell(t, cm2, "s", "fine")
	if jsonText(resultOf(t, c)) != "1" || strings.Contains(c.Notice, "could not restore") {
		t.Errorf("after a restart: %s", c.JSON())
	}
}

// TestPersist_RestoringHoldsASavedStateToTheSizeLimits: JSON values are
// parsed on budgets of their own because their size is bounded; a stored
// state over the limits a save keeps to (written by another version or by
// hand) is held to them at restore too.
func TestPersist_RestoringHoldsASavedStateToTheSizeLimits(t *testing.T) {
	t.Parallel()
	d, _ := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d, MaxVariableBytes: 100, MaxSnapshotBytes: 150})
	putSnapshot(t, d, "s",
		map[string]any{"name": "big", "json": json.RawMessage(`"` + strings.Repeat("x", 200) + `"`)},
		map[string]any{"name": "a", "json": json.RawMessage(`"` + strings.Repeat("a", 80) + `"`)},
		map[string]any{"name": "b", "source": "function b() { return '" + strings.Repeat("b", 60) + "' }"},
		map[string]any{"name": "c", "json": json.RawMessage(`1`)})
	c := runCell(t, cm, "s", "[typeof big, typeof a, typeof b, typeof c]")
	if got := jsonText(resultOf(t, c)); got != `["undefined","string","undefined","number"]` {
		t.Errorf("restored %s (%s)", got, c.JSON())
	}
	for _, want := range []string{"big (over the 100-byte limit for one variable)", "b (the saved state is limited to 150 bytes)"} {
		if !strings.Contains(c.Notice, want) {
			t.Errorf("notice %q lacks %q", c.Notice, want)
		}
	}
}

// TestPersist_ANamesLengthCountsTowardsTheStateLimit: the size limits
// counted a variable's value and not its name, so globals with
// megabyte-long names were all saved (the document past the state's limit)
// and every notice listed the names whole.
func TestPersist_ANamesLengthCountsTowardsTheStateLimit(t *testing.T) {
	t.Parallel()
	d, _ := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d, MaxVariableBytes: 1000, MaxSnapshotBytes: 2000})
	c := runCell(t, cm, "s", `for (let i = 0; i < 5; i++) globalThis["v" + "x".repeat(5000) + i] = i; var small = 1`)
	wantOK(t, c)
	f, err := d.GetFile(context.Background(), codemode.DefaultNamespace, "sessions/s")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Content) > 2500 || len(c.Notice) > 2000 {
		t.Errorf("saved %d bytes, notice of %d bytes", len(f.Content), len(c.Notice))
	}
	if !strings.Contains(string(f.Content), `"small"`) {
		t.Errorf("small was not saved: %.300s", f.Content)
	}
}
