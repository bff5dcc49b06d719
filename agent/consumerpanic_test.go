package agent

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// consumerPanic is the value a test's loop body panics with.
type consumerPanic struct{ at run.EventType }

func openPanicDB(t *testing.T) *db.DB {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "a.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// emittingTool forwards one custom event on the run's stream (as a team's
// delegation tool forwards a member's) and returns "done".
func emittingTool(honors bool) tool.Tool {
	return funcTool("relay", tool.FuncConfig{HonorsCancel: honors}, func(ctx context.Context) (string, error) {
		e := run.Event{Event: run.EventCustom, Content: "from the tool"}
		Emit(ctx, e)
		return "done", nil
	})
}

// rangeAndPanic ranges over seq, panicking in the loop body at the first
// event that stop accepts, and returns what the range statement panicked
// with.
func rangeAndPanic(seq func(func(run.Event, error) bool), stop func(run.Event) bool) (got any) {
	defer func() { got = recover() }()
	for e := range func(yield func(run.Event) bool) {
		seq(func(e run.Event, err error) bool { return yield(e) })
	} {
		if stop(e) {
			panic(consumerPanic{e.Event})
		}
	}
	return nil
}

// A stream consumer whose loop body panics on an event a tool forwarded
// (Emit, which runs the body on the tool call's stack) gets its own panic
// back from the range statement, and the run is stored CANCELLED without a
// tool error: the tool's recover does not turn the consumer's panic into
// the tool's failure and the run does not go on yielding after it.
func TestConsumerPanicInToolEmitReachesConsumer(t *testing.T) {
	for _, honors := range []bool{true, false} {
		t.Run(map[bool]string{true: "inline", false: "own goroutine"}[honors], func(t *testing.T) {
			d := openPanicDB(t)
			m := script(t,
				scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "relay"}}},
				scripted.Turn{Content: "finished"},
			)
			a := mustAgent(t, Config{Model: m, DB: d, Tools: []tool.Tool{emittingTool(honors)}})
			seq := a.Stream(context.Background(), run.TextInput("go"), WithRunID("r1"))
			got := rangeAndPanic(seq, func(e run.Event) bool { return e.Event == run.EventCustom })
			if got != (consumerPanic{run.EventCustom}) {
				t.Fatalf("the range statement panicked with %#v (%T), want the loop body's own panic", got, got)
			}
			row, err := d.GetRun(context.Background(), "r1")
			if err != nil {
				t.Fatalf("the run was not stored: %v", err)
			}
			if row.Status != run.StatusCancelled {
				t.Fatalf("stored status %s, want CANCELLED", row.Status)
			}
			out, err := row.Output()
			if err != nil {
				t.Fatal(err)
			}
			for _, ex := range out.Tools {
				if ex.ToolCallError || strings.Contains(ex.Result, "panic") {
					t.Fatalf("the consumer's panic was stored as the tool's failure: %+v", ex)
				}
			}
		})
	}
}

// A loop body panicking at any event of a plain run (not forwarded) gets
// its own panic back and the run is stored (CANCELLED) rather than lost.
func TestConsumerPanicAtEveryEventIsStored(t *testing.T) {
	var kinds []run.EventType
	{
		m := script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "relay"}}}, scripted.Turn{Content: "finished"})
		a := mustAgent(t, Config{Model: m, Tools: []tool.Tool{emittingTool(true)}})
		for _, e := range collect(t, a.Stream(context.Background(), run.TextInput("go"))) {
			kinds = append(kinds, e.Event)
		}
	}
	for i, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			d := openPanicDB(t)
			m := script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "relay"}}}, scripted.Turn{Content: "finished"})
			a := mustAgent(t, Config{Model: m, DB: d, Tools: []tool.Tool{emittingTool(true)}})
			n := 0
			got := rangeAndPanic(a.Stream(context.Background(), run.TextInput("go"), WithRunID("r1")),
				func(run.Event) bool { n++; return n == i+1 })
			if got != (consumerPanic{k}) {
				t.Fatalf("the range statement panicked with %#v (%T), want the loop body's own panic", got, got)
			}
			row, err := d.GetRun(context.Background(), "r1")
			if err != nil {
				t.Fatalf("the run was not stored: %v", err)
			}
			want := run.StatusCancelled
			if k == run.EventRunCompleted {
				want = run.StatusCompleted // stored before the event is sent
			}
			if row.Status != want {
				t.Fatalf("stored status %s, want %s", row.Status, want)
			}
		})
	}
}

// A consumer breaking out of the loop while a tool call forwards events
// leaves no goroutine behind and the run is stored CANCELLED.
func TestConsumerBreakDuringToolCall(t *testing.T) {
	for _, honors := range []bool{true, false} {
		t.Run(map[bool]string{true: "inline", false: "own goroutine"}[honors], func(t *testing.T) {
			d := openPanicDB(t)
			m := script(t,
				scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "relay"}, {Name: "relay"}}},
				scripted.Turn{Content: "finished"},
			)
			a := mustAgent(t, Config{Model: m, DB: d, Tools: []tool.Tool{emittingTool(honors)}})
			for e, err := range a.Stream(context.Background(), run.TextInput("go"), WithRunID("r1")) {
				if err != nil {
					t.Fatal(err)
				}
				if e.Event == run.EventCustom {
					break
				}
			}
			row, err := d.GetRun(context.Background(), "r1")
			if err != nil {
				t.Fatalf("the run was not stored: %v", err)
			}
			if row.Status != run.StatusCancelled {
				t.Fatalf("stored status %s, want CANCELLED", row.Status)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				left := runGoroutines()
				if left == "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("goroutines of the run left behind:\n%s", left)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// runGoroutines returns the stacks of goroutines executing a run's code
// (its tool calls included).
func runGoroutines() string {
	buf := make([]byte, 1<<20)
	var left []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "agent.(*state)") {
			left = append(left, g)
		}
	}
	return strings.Join(left, "\n\n")
}

// The consumer's panic, passing through a tool that forwarded an event, is
// not the tool's failure: the tool hooks (LogToolCalls logs failures) never
// see a failed result, and a member agent run inside the tool, forwarding
// its events (WithEventFunc + Emit) from its own tool, ends stored
// CANCELLED as its team's run does.
func TestConsumerPanicThroughToolHooksAndMember(t *testing.T) {
	d := openPanicDB(t)
	var failed []error
	hook := func(next ToolHandler) ToolHandler {
		return func(ctx context.Context, call model.ToolCall) tool.Result {
			r := next(ctx, call)
			if r.Err != nil {
				failed = append(failed, r.Err)
			}
			return r
		}
	}
	member := mustAgent(t, Config{
		Model: script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "relay"}}}, scripted.Turn{Content: "member done"}),
		DB:    d, Tools: []tool.Tool{emittingTool(true)}, ToolHooks: []ToolHook{hook},
	})
	delegate := funcTool("delegate", tool.FuncConfig{HonorsCancel: true}, func(ctx context.Context) (string, error) {
		out, err := member.Run(ctx, run.TextInput("work"), WithRunID("m1"),
			WithEventFunc(func(e run.Event) { Emit(ctx, e) }))
		if err != nil {
			return "", err
		}
		return out.Content.(string), nil
	})
	leader := mustAgent(t, Config{
		Model: script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "delegate"}}}, scripted.Turn{Content: "finished"}),
		DB:    d, Tools: []tool.Tool{delegate}, ToolHooks: []ToolHook{hook},
	})
	got := rangeAndPanic(leader.Stream(context.Background(), run.TextInput("go"), WithRunID("l1")),
		func(e run.Event) bool { return e.Event == run.EventCustom })
	if got != (consumerPanic{run.EventCustom}) {
		t.Fatalf("the range statement panicked with %#v (%T), want the loop body's own panic", got, got)
	}
	if len(failed) > 0 {
		t.Fatalf("tool hooks saw the consumer's panic as a tool failure: %v", failed)
	}
	for _, id := range []string{"l1", "m1"} {
		row, err := d.GetRun(context.Background(), id)
		if err != nil {
			t.Fatalf("run %s was not stored: %v", id, err)
		}
		if row.Status != run.StatusCancelled {
			t.Fatalf("run %s stored %s, want CANCELLED", id, row.Status)
		}
	}
}

// A consumer breaking out of the loop at any event, with two tool calls
// running concurrently, leaves no goroutine of the run behind and the run
// stored: CANCELLED, unless it was stored before its terminal event.
func TestConsumerBreakAtEveryEvent(t *testing.T) {
	turns := func() *scripted.Model {
		return script(t, scripted.Turn{Reasoning: "think", ToolCalls: []scripted.ToolCall{{Name: "relay"}, {Name: "relay"}}}, scripted.Turn{Content: "finished"})
	}
	var kinds []run.EventType
	{
		a := mustAgent(t, Config{Model: turns(), Tools: []tool.Tool{emittingTool(false)}})
		for _, e := range collect(t, a.Stream(context.Background(), run.TextInput("go"))) {
			kinds = append(kinds, e.Event)
		}
	}
	for i, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			d := openPanicDB(t)
			a := mustAgent(t, Config{Model: turns(), DB: d, Tools: []tool.Tool{emittingTool(false)}})
			n := 0
			for _, err := range a.Stream(context.Background(), run.TextInput("go"), WithRunID("r1")) {
				if err != nil {
					t.Fatal(err)
				}
				if n++; n == i+1 {
					break
				}
			}
			row, err := d.GetRun(context.Background(), "r1")
			if err != nil {
				t.Fatalf("the run was not stored: %v", err)
			}
			// Once the model answered, a break does not undo the answer.
			answered := i >= slices.Index(kinds, run.EventRunContent)
			if row.Status != run.StatusCancelled && (!answered || row.Status != run.StatusCompleted) {
				t.Fatalf("stored status %s, want CANCELLED", row.Status)
			}
			deadline := time.Now().Add(5 * time.Second)
			for left := runGoroutines(); left != ""; left = runGoroutines() {
				if time.Now().After(deadline) {
					t.Fatalf("goroutines of the run left behind:\n%s", left)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
