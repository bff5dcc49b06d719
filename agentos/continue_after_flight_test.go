package agentos

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/workflow"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A continue posted as soon as its client saw the run PAUSED, while the
// execution that paused it (a background worker, a streamed request) has
// not yet let go of the run in this process, waits for that end and
// continues the run. It answered 409 "the run is already executing" for a
// run the client had just been told was paused.

// whileLetGoOf registers runID as an execution of c in flight, as a worker
// returning from the run leaves it, calls send on another goroutine, checks
// that send has not answered while the run was held, then ends the
// registration and returns send's answer.
func whileLetGoOf[T any](t *testing.T, srv *Server, runID string, c run.Component, send func() T) T {
	t.Helper()
	_, fl, err := srv.runs.begin(context.Background(), runID, c, "", false)
	if err != nil {
		t.Fatal(err)
	}
	answer := make(chan T, 1)
	go func() { answer <- send() }()
	select {
	case got := <-answer:
		srv.runs.end(runID, fl)
		t.Fatalf("the continue answered while the run was still held: %+v", got)
	case <-time.After(300 * time.Millisecond):
	}
	srv.runs.end(runID, fl)
	return <-answer
}

func TestContinue_WaitsForTheExecutionLettingGoOfThePausedRun(t *testing.T) {
	t.Parallel()
	confirmed := func(paused run.Output) string {
		return `[{"tool_call_id":"` + paused.Tools[0].ToolCallID + `","confirmed":true}]`
	}

	t.Run("agent continue route", func(t *testing.T) {
		t.Parallel()
		f := newRunsFixture(t, Config{})
		paused := decode[run.Output](t, postForm(t, f.url+"/agents/hitl/runs", map[string]string{"message": "delete", "stream": "false"}, nil))
		if paused.Status != run.StatusPaused {
			t.Fatalf("run %s", paused.Status)
		}
		res := whileLetGoOf(t, f.srv, paused.RunID, run.Component{Type: run.TypeAgent, ID: "hitl"}, func() response {
			return sent(f.url+"/agents/hitl/runs/"+paused.RunID+"/continue", map[string]string{"tools": confirmed(paused), "stream": "false"})
		})
		if res.status != http.StatusOK {
			t.Fatalf("continue %d %s", res.status, res.body)
		}
		if out := decode[run.Output](t, res); out.Status != run.StatusCompleted || f.executed.Load() != 1 {
			t.Errorf("continued run %s, tool ran %d times", out.Status, f.executed.Load())
		}
	})

	t.Run("workflow continue route", func(t *testing.T) {
		t.Parallel()
		wf := reviewedFlow(t, testdbs.SQLite(t), nil)
		var srv *Server
		ts, _ := testServer(t, Config{Workflows: []*workflow.Workflow{wf}}, func(s *Server) { srv = s })
		paused := decode[run.Output](t, postForm(t, ts.URL+"/workflows/flow/runs", map[string]string{"message": "go", "stream": "false"}, nil))
		if paused.Status != run.StatusPaused || len(paused.StepRequirements) != 1 {
			t.Fatalf("run %s %+v", paused.Status, paused.StepRequirements)
		}
		answer := `[{"step_id":"` + paused.StepRequirements[0].StepID + `","confirmed":true}]`
		res := whileLetGoOf(t, srv, paused.RunID, wf.Component(), func() response {
			return sent(ts.URL+"/workflows/flow/runs/"+paused.RunID+"/continue", map[string]string{"step_requirements": answer, "stream": "false"})
		})
		if res.status != http.StatusOK {
			t.Fatalf("continue %d %s", res.status, res.body)
		}
		if out := decode[run.Output](t, res); out.Status != run.StatusCompleted {
			t.Errorf("continued workflow run %s", out.Status)
		}
	})

	t.Run("MCP continue_run", func(t *testing.T) {
		t.Parallel()
		f := newRunsFixture(t, Config{MCP: MCP{Enabled: true}})
		cs := mcpConnect(t, f.url, "", nil)
		st := structured(t, callTool(t, cs, "run_agent", map[string]any{"agent_id": "hitl", "message": "delete it"}))
		reqs, _ := st["requirements"].([]any)
		if st["status"] != "PAUSED" || len(reqs) != 1 {
			t.Fatalf("paused result = %v", st)
		}
		runID := st["run_id"].(string)
		req := reqs[0].(map[string]any)
		req["tool_execution"].(map[string]any)["confirmed"] = true
		r := whileLetGoOf(t, f.srv, runID, run.Component{Type: run.TypeAgent, ID: "hitl"}, func() string {
			r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "continue_run",
				Arguments: map[string]any{"agent_id": "hitl", "run_id": runID, "session_id": st["session_id"], "requirements": []any{req}}})
			if err != nil {
				return "error: " + err.Error()
			}
			if r.IsError {
				return "error: " + resultText(r)
			}
			return resultText(r)
		})
		if r != "all done" || f.executed.Load() != 1 {
			t.Errorf("continue_run = %q, tool ran %d times", r, f.executed.Load())
		}
	})
}

// sent posts fields to u on a goroutine that must not t.Fatal: a failed
// request is a response with status 0 and the error as its body.
func sent(u string, fields map[string]string) response {
	res, err := sendForm(u, fields, nil)
	if err != nil {
		return response{body: err.Error()}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return response{body: err.Error()}
	}
	return response{status: res.StatusCode, header: res.Header, body: string(b)}
}

// reviewedFlow is workflow "flow" on d: one step, "review", under human
// confirmation, which calls during (when set) and answers "reviewed".
func reviewedFlow(t *testing.T, d *db.DB, during func()) *workflow.Workflow {
	t.Helper()
	step := workflow.Step{Name: "review", Func: func(context.Context, *workflow.StepInput) (workflow.FuncResult, error) {
		if during != nil {
			during()
		}
		return workflow.FuncResult{Content: "reviewed"}, nil
	}, HumanReview: &workflow.HumanReview{RequiresConfirmation: true}}
	wf, err := workflow.New(workflow.Config{ID: "flow", Name: "Flow", DB: d, Steps: []workflow.Step{step}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wf.Close)
	return wf
}
