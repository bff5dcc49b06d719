package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// nester is a tool that reports n calls made on the model's behalf, from
// concurrent goroutines, the last one failing.
func nester(name string, n int) tool.Tool {
	return funcTool(name, tool.FuncConfig{}, func(ctx context.Context) (string, error) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				RecordToolCall(ctx, run.ToolExecution{ToolCallID: fmt.Sprintf("%s-inner-%d", name, i), ToolName: "inner",
					ToolArgs: []byte(fmt.Sprintf(`{"i":%d}`, i)), Result: "r", ToolCallError: i == n-1, Metrics: &run.Metrics{Duration: 0.5}})
			})
		}
		wg.Wait()
		return name + " done", nil
	})
}

func TestRecordToolCall_NestedCallsAreStoredAndEmittedBeforeTheirTool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		calls []scripted.ToolCall
	}{
		{"one tool in the turn", []scripted.ToolCall{{Name: "outer"}}},
		{"parallel tools in the turn", []scripted.ToolCall{{Name: "outer"}, {Name: "other"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := db.New("", memory.New())
			a := mustAgent(t, Config{Model: script(t, scripted.Turn{ToolCalls: tt.calls}, scripted.Turn{Content: "ok"}),
				Tools: []tool.Tool{nester("outer", 3), nester("other", 2)}, DB: store, StoreEvents: true})
			evs := collect(t, a.Stream(context.Background(), run.TextInput("go")))

			// Stored run: each nested call just before the call that made it.
			row, err := store.GetRun(context.Background(), find(evs, run.EventRunCompleted).RunID)
			if err != nil {
				t.Fatal(err)
			}
			out, err := row.Output()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ex := range out.Tools {
				got = append(got, ex.ToolName)
			}
			want := "inner inner inner outer"
			if len(tt.calls) == 2 {
				want += " inner inner other"
			}
			if strings.Join(got, " ") != want {
				t.Fatalf("stored tools = %v, want %s", got, want)
			}
			errs := 0
			for _, ex := range out.Tools[:3] {
				if ex.ToolCallError {
					errs++
				}
				if !strings.HasPrefix(ex.ToolCallID, "outer-inner-") || len(ex.ToolArgs) == 0 || ex.Result != "r" || ex.Metrics == nil || ex.Metrics.Duration != 0.5 {
					t.Errorf("nested execution lost fields: %+v", ex)
				}
			}
			if errs != 1 {
				t.Errorf("%d nested calls of outer stored as errors, want 1", errs)
			}
			// The model saw only its own calls: nested calls are not messages.
			var toolMsgs int
			for _, m := range out.Messages {
				if m.Role == model.RoleTool {
					toolMsgs++
				}
			}
			if toolMsgs != len(tt.calls) {
				t.Errorf("%d tool messages, want %d", toolMsgs, len(tt.calls))
			}

			// Events: started and completed/error for each nested call, before
			// the completion of its tool.
			var seq []string
			for _, e := range evs {
				if e.Tool != nil && (e.Tool.ToolName == "inner" || e.Event == run.EventToolCallCompleted) {
					seq = append(seq, string(e.Event)+":"+e.Tool.ToolName)
				}
			}
			end := -1
			for i, e := range seq {
				if e == "ToolCallCompleted:outer" {
					end = i
				}
			}
			if end < 6 {
				t.Fatalf("events = %v: want six nested events before outer's completion", seq)
			}
			block := seq[end-6 : end]
			for i := 0; i < 6; i += 2 {
				if block[i] != "ToolCallStarted:inner" || (block[i+1] != "ToolCallCompleted:inner" && block[i+1] != "ToolCallError:inner") {
					t.Fatalf("events before outer's completion = %v, want started/finished pairs of inner", block)
				}
			}
			if strings.Count(strings.Join(block, " "), "ToolCallError") != 1 {
				t.Errorf("events before outer's completion = %v, want one ToolCallError", block)
			}
			if n := count(out.Events, run.EventToolCallStarted); n != len(strings.Fields(want)) {
				t.Errorf("stored events have %d ToolCallStarted, want %d", n, len(strings.Fields(want)))
			}
		})
	}
}

func TestRecordToolCall_OutsideAToolCallRecordsNothing(t *testing.T) {
	t.Parallel()
	if RecordToolCall(context.Background(), run.ToolExecution{ToolName: "x"}) {
		t.Fatal("RecordToolCall reported success outside an agent's tool call")
	}
}

func TestRecordToolCall_CallsAfterTheToolReturnedAreDropped(t *testing.T) {
	t.Parallel()
	late := make(chan context.Context, 1)
	leaky := funcTool("leaky", tool.FuncConfig{}, func(ctx context.Context) (string, error) {
		late <- ctx
		return "ok", nil
	})
	a := mustAgent(t, Config{Model: script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "leaky"}}}, scripted.Turn{Content: "done"}),
		Tools: []tool.Tool{leaky}})
	out, err := a.Run(context.Background(), run.TextInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	RecordToolCall(<-late, run.ToolExecution{ToolName: "too-late"})
	if len(out.Tools) != 1 || out.Tools[0].ToolName != "leaky" {
		t.Fatalf("tools = %+v", out.Tools)
	}
}

// TestRecordToolCall_NestedCallsDoNotCountAgainstToolCallLimit: the limit
// counts the calls the model made (a tool that made others counts once),
// also when a paused run continues.
func TestRecordToolCall_NestedCallsDoNotCountAgainstToolCallLimit(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	confirm := funcTool("confirm_me", tool.FuncConfig{RequiresConfirmation: true}, func(context.Context) (string, error) {
		ran.Add(1)
		return "confirmed and ran", nil
	})
	a := mustAgent(t, Config{ToolCallLimit: 2, Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "outer"}}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "confirm_me"}}},
		scripted.Turn{Content: "done"},
	), Tools: []tool.Tool{nester("outer", 3), confirm}})
	paused, err := a.Run(context.Background(), run.TextInput("go"))
	if err != nil || paused.Status != run.StatusPaused {
		t.Fatalf("first leg: %v %s", err, paused.Status)
	}
	paused.Requirements[0].ToolExecution.Confirmed = boolp(true)
	out, err := a.ContinueRun(context.Background(), paused)
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("continued: %v %s", err, out.Status)
	}
	if ran.Load() != 1 {
		last := out.Tools[len(out.Tools)-1]
		t.Fatalf("the confirmed call did not run (%q): nested calls were counted against the limit", last.Result)
	}
}
