package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

type hitlFixture struct {
	agent    *Agent
	executed *atomic.Int32
}

func newHITL(t *testing.T, cfg tool.FuncConfig) hitlFixture {
	t.Helper()
	var n atomic.Int32
	del := funcTool("delete_file", cfg, func(context.Context) (string, error) { n.Add(1); return "deleted", nil })
	a := mustAgent(t, Config{Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "delete_file"}, {Name: "add", Args: map[string]any{"a": 1, "b": 1}}}},
		scripted.Turn{Content: "all done"},
	), Tools: []tool.Tool{del, addTool()}})
	return hitlFixture{agent: a, executed: &n}
}

func boolp(b bool) *bool { return &b }

func TestRun_ConfirmationPausesThenContinues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		confirm   bool
		wantExec  int32
		wantInRes string
	}{
		{"confirmed tool runs", true, 1, "deleted"},
		{"rejected tool is reported to the model", false, 0, "rejected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newHITL(t, tool.FuncConfig{RequiresConfirmation: true})
			evs := collect(t, f.agent.Stream(context.Background(), run.TextInput("delete it")))
			p := find(evs, run.EventRunPaused)
			if p == nil || len(p.Requirements) != 1 || len(p.Tools) != 1 || !p.Tools[0].RequiresConfirmation || evs[len(evs)-1].Event != run.EventRunPaused {
				t.Fatalf("events %v paused %+v", names(evs), p)
			}
			out, err := f.agent.Run(context.Background(), run.TextInput("delete it"))
			if err != nil || out.Status != run.StatusPaused || len(out.Requirements) != 1 || f.executed.Load() != 0 {
				t.Fatalf("status %s err %v reqs %d", out.Status, err, len(out.Requirements))
			}
			out.Requirements[0].ToolExecution.Confirmed = boolp(tc.confirm)
			out.Requirements[0].ToolExecution.ConfirmationNote = "not today"
			evs = collect(t, f.agent.ContinueStream(context.Background(), out))
			if evs[0].Event != run.EventRunContinued {
				t.Fatalf("first event %s", evs[0].Event)
			}
			done := find(evs, run.EventRunCompleted)
			if done == nil || done.Content != "all done" || f.executed.Load() != tc.wantExec {
				t.Fatalf("events %v executed %d", names(evs), f.executed.Load())
			}
			if out.Status != run.StatusPaused {
				t.Fatal("ContinueRun must not change the caller's paused output")
			}
			final, err := f.agent.ContinueRun(context.Background(), out)
			if err != nil || final.Status != run.StatusCompleted || final.RunID != out.RunID || len(final.Requirements) != 0 {
				t.Fatalf("status %s err %v", final.Status, err)
			}
			var del, add *run.ToolExecution
			for i := range final.Tools {
				switch final.Tools[i].ToolName {
				case "delete_file":
					del = &final.Tools[i]
				case "add":
					add = &final.Tools[i]
				}
			}
			if del == nil || !strings.Contains(del.Result, tc.wantInRes) || add == nil || add.Result != "2" || len(final.Tools) != 2 {
				t.Fatalf("tools %+v", final.Tools)
			}
		})
	}
}

func TestContinueRun_UserInputAndExternalExecution(t *testing.T) {
	t.Parallel()
	t.Run("user input supplies the arguments", func(t *testing.T) {
		t.Parallel()
		ask := tool.MustFunc(tool.FuncConfig{Name: "book", Description: "Books a table.", RequiresUserInput: true},
			func(_ context.Context, in addArgs) (int, error) { return in.A * in.B, nil })
		a := mustAgent(t, Config{Model: script(t,
			scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "book", Args: map[string]any{"a": 0, "b": 0}}}},
			scripted.Turn{Content: "booked"}), Tools: []tool.Tool{ask}})
		out, err := a.Run(context.Background(), run.TextInput("book"))
		if err != nil || out.Status != run.StatusPaused || out.Requirements[0].Kind != "user_input" || len(out.Requirements[0].ToolExecution.UserInputSchema) == 0 {
			t.Fatalf("%v %+v", err, out.Requirements)
		}
		id := out.Requirements[0].ID
		final, err := a.ContinueRun(context.Background(), out, WithTools([]run.ToolExecution{{ToolCallID: id, ToolArgs: json.RawMessage(`{"a":6,"b":7}`), Answered: boolp(true)}}))
		if err != nil || final.Content != "booked" || final.Tools[0].Result != "42" {
			t.Fatalf("%v %+v", err, final.Tools)
		}
	})
	t.Run("external execution supplies the result", func(t *testing.T) {
		t.Parallel()
		f := newHITL(t, tool.FuncConfig{ExternalExecution: true})
		out, err := f.agent.Run(context.Background(), run.TextInput("x"))
		if err != nil || out.Status != run.StatusPaused || out.Requirements[0].Kind != "external_execution" {
			t.Fatalf("%v %+v", err, out)
		}
		req := out.Requirements[0]
		req.ToolExecution = &run.ToolExecution{ToolCallID: req.ID, Result: "done elsewhere"}
		final, err := f.agent.ContinueRun(context.Background(), out, WithRequirements([]run.Requirement{req}))
		if err != nil || final.Status != run.StatusCompleted || f.executed.Load() != 0 {
			t.Fatalf("%v %s", err, final.Status)
		}
		if final.Tools[len(final.Tools)-1].Result != "done elsewhere" && final.Tools[0].Result != "done elsewhere" {
			t.Fatalf("tools %+v", final.Tools)
		}
	})
}

// An externally executed tool that printed nothing has a result: "" given
// as a result (a client's "result": "", or SetResult("")) continues the run,
// as Agno takes any result that is not None. It was taken for no result,
// so the run could never continue.
func TestContinueRun_ExternalExecutionWithAnEmptyResult(t *testing.T) {
	t.Parallel()
	for name, resolve := range map[string]func(id string) run.ToolExecution{
		"sent as JSON": func(id string) run.ToolExecution {
			var ex run.ToolExecution
			if err := json.Unmarshal([]byte(`{"tool_call_id":"`+id+`","result":""}`), &ex); err != nil {
				t.Fatal(err)
			}
			return ex
		},
		"SetResult": func(id string) run.ToolExecution {
			ex := run.ToolExecution{ToolCallID: id}
			ex.SetResult("")
			return ex
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newHITL(t, tool.FuncConfig{ExternalExecution: true})
			out, err := f.agent.Run(context.Background(), run.TextInput("x"))
			if err != nil || out.Status != run.StatusPaused {
				t.Fatalf("%v %+v", err, out)
			}
			id := out.Requirements[0].ID
			if _, err := f.agent.ContinueRun(context.Background(), out, WithTools([]run.ToolExecution{{ToolCallID: id}})); !errors.Is(err, ErrRequirementUnresolved) {
				t.Fatalf("no result at all: %v", err)
			}
			final, err := f.agent.ContinueRun(context.Background(), out, WithTools([]run.ToolExecution{resolve(id)}))
			if err != nil || final.Status != run.StatusCompleted || f.executed.Load() != 0 {
				t.Fatalf("%v %+v", err, final)
			}
		})
	}
}

func TestContinueRun_RejectsWhatCannotContinue(t *testing.T) {
	t.Parallel()
	f := newHITL(t, tool.FuncConfig{RequiresConfirmation: true})
	paused, err := f.agent.Run(context.Background(), run.TextInput("x"))
	if err != nil {
		t.Fatal(err)
	}
	completed, err := mustAgent(t, Config{Model: scripted.Reply("x")}).Run(context.Background(), run.TextInput("x"))
	if err != nil {
		t.Fatal(err)
	}
	other := mustAgent(t, Config{Name: "other", Model: scripted.Reply("x")})
	tests := []struct {
		name  string
		agent *Agent
		run   *run.Output
		want  error
	}{
		{"completed run", f.agent, completed, run.ErrNotContinuable},
		{"unresolved requirement", f.agent, paused, ErrRequirementUnresolved},
		{"another agent's run", other, paused, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.agent.ContinueRun(context.Background(), tc.run)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			for _, err := range tc.agent.ContinueStream(context.Background(), tc.run) {
				if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
					t.Fatalf("stream err = %v, want %v", err, tc.want)
				}
			}
		})
	}
}
