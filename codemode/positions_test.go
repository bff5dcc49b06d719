package codemode_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/codemode"
	"github.com/dop251/goja"
)

// TestRun_StacksOfOldCellsGiveNoWrongColumn: a kernel keeps the position
// maps of its last 64 cells only; a function of an older cell failing
// later was given goja's byte column in the rewritten source ("cell[1]:1:51"
// for the model's column 40: the rewrite's prefix on the function's name
// and the bytes of "ééé" counted). Every position must be plain
// JavaScript's, or give the line alone.
func TestRun_StacksOfOldCellsGiveNoWrongColumn(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	code := "function bad() { const s = 'ééé'; null.x }"
	wantOK(t, runCell(t, cm, "s", code))
	_, err := goja.New().RunScript("cell[1]", asciiTwin(code+"\nbad()"))
	ex, ok := err.(*goja.Exception)
	if !ok {
		t.Fatalf("plain: %v", err)
	}
	plain := cellPositions(ex.Value().ToObject(nil).Get("stack").String())
	if len(plain) == 0 || !strings.HasPrefix(plain[0], "cell[1]:1:") {
		t.Fatalf("plain positions %v", plain)
	}
	want := plain[0]
	for n := 2; n <= 100; n++ {
		c := runCell(t, cm, "s", "bad()")
		if c.Error == nil {
			t.Fatalf("cell %d: %s", n, c.JSON())
		}
		pos := regexp.MustCompile(`cell\[1\][:\d]*`).FindString(c.Error.Stack)
		if pos != want && pos != "cell[1]:1" {
			t.Fatalf("cell %d: the failing function's position %q, want %q (or its line alone): %s", n, pos, want, c.Error.Stack)
		}
		if self := fmt.Sprintf("cell[%d]:1:4", n); !slices.Contains(cellPositions(c.Error.Stack), self) {
			t.Fatalf("cell %d: its own position missing: %s", n, c.Error.Stack)
		}
	}
}
