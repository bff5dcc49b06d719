package offload_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/offload"
)

// RE2 is linear in the text, times the pattern's program: a counted
// repetition the model writes (".{0,100}x", "(.{0,30}){30}x") costs tens
// of nanoseconds per byte per instruction, so one search of an 8 MB result
// ran for many minutes, past any tool timeout (regexp takes no context),
// on short lines and inside one long line alike. A scan now stops at the
// offloader's search time with ErrSearchTooSlow, and at its context's end.
func TestSearch_ACostlyPatternStopsAtTheSearchTime(t *testing.T) {
	t.Parallel()
	o := newOffloader(t, testdbs.SQLite(t), offload.Config{})
	offload.SetSearchTime(o, 100*time.Millisecond)
	lines, err := o.Offload(ctx, call, strings.Repeat(strings.Repeat("a", 400)+"\n", 100))
	if err != nil || !lines.Stored {
		t.Fatal(lines, err)
	}
	long := call
	long.ToolCallID = "c2"
	line, err := o.Offload(ctx, long, strings.Repeat("a", 40_000))
	if err != nil || !line.Stored {
		t.Fatal(line, err)
	}
	for name, id := range map[string]string{"short lines": lines.ResultID, "one long line": line.ResultID} {
		start := time.Now()
		ms, err := o.Search(ctx, call.Scope, id, `(.{0,30}){30}X`, 0)
		if !errors.Is(err, offload.ErrSearchTooSlow) || time.Since(start) > 20*time.Second {
			t.Fatalf("%s: %d matches, %v after %v; want ErrSearchTooSlow at about 100ms", name, len(ms), err, time.Since(start))
		}
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(50*time.Millisecond, cancel)
		if _, err := o.Search(cctx, call.Scope, id, `(.{0,30}){30}X`, 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: cancelled search: %v", name, err)
		}
	}
	// a pattern that finishes in time matches as before, through the
	// reader too (40,000 bytes times its 200-odd instructions)
	offload.SetSearchTime(o, offload.MaxSearchTime)
	ms, err := o.Search(ctx, call.Scope, line.ResultID, `[ab]{200}$`, 0)
	if err != nil || len(ms) != 1 || !strings.HasPrefix(ms[0].Line, "[... 39700 chars omitted ...] ") {
		t.Fatalf("pattern in time: %+v, %v", ms, err)
	}
}
