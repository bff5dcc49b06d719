package offload_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/offload"
)

// OpenAI-compatible servers that send no tool call ids get "call_0" for
// the first call of every turn: two different results of one run under
// the same tool call id must both stay readable by the ids their
// envelopes gave, never the later one under the earlier one's id.
func TestOffload_AReusedToolCallIDNeverReplacesAnEarlierResult(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		o := newOffloader(t, d, offload.Config{})
		same := offload.Call{Scope: call.Scope, ToolCallID: "call_0", ToolName: "fetch"}
		first := bigResult(800, 40)
		second := strings.ReplaceAll(bigResult(900, 40), "x", "y")
		a, err := o.Offload(ctx, same, first)
		if err != nil || !a.Stored {
			t.Fatalf("first: %+v %v", a, err)
		}
		b, err := o.Offload(ctx, same, second)
		if err != nil || !b.Stored {
			t.Fatalf("second: %+v %v", b, err)
		}
		if a.ResultID == b.ResultID {
			t.Fatalf("two different results share the id %s", a.ResultID)
		}
		for _, c := range []struct {
			id, want string
		}{{a.ResultID, first}, {b.ResultID, second}} {
			got, row, err := o.Get(ctx, call.Scope, c.id)
			if err != nil || got != c.want || row.SizeBytes != int64(len(c.want)) {
				t.Fatalf("%s: %d bytes (want %d), %v", c.id, len(got), len(c.want), err)
			}
			if !strings.Contains(map[string]string{a.ResultID: a.Content, b.ResultID: b.Content}[c.id], `<result id="`+c.id+`"`) {
				t.Fatalf("envelope does not name %s", c.id)
			}
		}
		// the same result again (a replayed call) keeps its id
		again, err := o.Offload(ctx, same, second)
		if err != nil || again.ResultID != b.ResultID {
			t.Fatalf("replay: %+v %v (want %s)", again.ResultID, err, b.ResultID)
		}
		if list, err := o.List(ctx, call.Scope, 10); err != nil || len(list) != 2 {
			t.Fatalf("list = %d rows, %v", len(list), err)
		}
	})
}

// Concurrent calls with one id (one turn's calls without ids) each get
// their own result.
func TestOffload_ConcurrentResultsUnderOneToolCallIDAreAllKept(t *testing.T) {
	t.Parallel()
	o := newOffloader(t, testdbs.SQLite(t), offload.Config{})
	same := offload.Call{Scope: call.Scope, ToolCallID: "call_0", ToolName: "fetch"}
	const n = 4
	results := make([]string, n)
	outs := make([]offload.Outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		results[i] = strings.ReplaceAll(bigResult(800, 40), "x", string(rune('a'+i)))
		wg.Go(func() {
			out, err := o.Offload(ctx, same, results[i])
			if err != nil {
				t.Error(err)
			}
			outs[i] = out
		})
	}
	wg.Wait()
	for i, out := range outs {
		got, _, err := o.Get(ctx, call.Scope, out.ResultID)
		if !out.Stored || err != nil || got != results[i] {
			t.Fatalf("result %d (%s, stored %v): %.20q, %v", i, out.ResultID, out.Stored, got, err)
		}
	}
}
