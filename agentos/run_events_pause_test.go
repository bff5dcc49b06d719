package agentos

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/workflow"
)

// A background run that pauses for a tool's confirmation, is continued
// without streaming (outside its event log) and pauses for another tool
// call: a client holding the first RunPaused gets 204 while that pause
// stands, then the second pause, built from the row, with the tool call
// it awaits.
func TestResume_BackgroundRunPausedTwiceEndToEnd(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	del := tool.MustFunc(tool.FuncConfig{Name: "delete_file", Description: "Deletes a file.", RequiresConfirmation: true},
		func(context.Context, struct{}) (string, error) { return "deleted", nil })
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "delete_file"}}},
		{ToolCalls: []scripted.ToolCall{{Name: "delete_file"}}},
		{Content: "all done"},
	}})
	a, err := agent.New(agent.Config{ID: "hitl", Name: "HITL", Model: m, DB: d, Tools: []tool.Tool{del}})
	if err != nil {
		t.Fatal(err)
	}
	qc := queue.Config{PollInterval: 20 * time.Millisecond, LockGrace: 2 * time.Second}
	var srv *Server
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}, Queue: &qc}, func(s *Server) {
		srv = s
		s.tailCfg = testTailConfig
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	u := ts.URL
	acc := accepted(t, postForm(t, u+"/agents/hitl/runs", map[string]string{"message": "delete it", "background": "true"}, nil))
	waitStatus(t, d, acc.RunID, run.StatusPaused)
	l, err := srv.events.of(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	first := waitFinalEvent(t, srv, l, acc.RunID)
	resume := u + "/agents/hitl/runs/" + acc.RunID + "/resume"
	fs := resumeFrames(t, resume, "-1")
	held := fs[len(fs)-1]
	callIDs := pausedFrame(t, held)
	if held.event != string(run.EventRunPaused) || held.id != strconv.FormatInt(first, 10) || len(callIDs) != 2 {
		t.Fatalf("first stream ended with %+v, want RunPaused#%d awaiting one tool call", held, first)
	}
	if res := get(t, resume, map[string]string{"Last-Event-ID": held.id}); res.status != http.StatusNoContent {
		t.Fatalf("client holding the standing pause: %d %q", res.status, res.body)
	}

	tools := `[{"tool_call_id":"` + callIDs[0] + `","tool_name":"delete_file","requires_confirmation":true,"confirmed":true}]`
	out := decode[run.Output](t, postForm(t, u+"/agents/hitl/runs/"+acc.RunID+"/continue", map[string]string{"tools": tools, "stream": "false"}, nil))
	if out.Status != run.StatusPaused || len(out.Requirements) != 1 || out.Requirements[0].ID == callIDs[0] {
		t.Fatalf("continued run: %s awaiting %+v, want PAUSED on a new tool call", out.Status, out.Requirements)
	}
	fs = resumeFrames(t, resume, held.id)
	if len(fs) != 2 || fs[1].event != string(run.EventRunPaused) || fs[1].id != strconv.FormatInt(first+1, 10) ||
		!slices.Equal(pausedFrame(t, fs[1]), []string{out.Requirements[0].ID, "tool:" + out.Requirements[0].ID}) {
		t.Fatalf("after the first pause: %+v, want replay and RunPaused#%d awaiting %s", fs, first+1, out.Requirements[0].ID)
	}
	if res := get(t, resume, map[string]string{"Last-Event-ID": fs[1].id}); res.status != http.StatusNoContent {
		t.Fatalf("client holding the second pause: %d %q", res.status, res.body)
	}
}

// awaitingTools are the requirements of a run paused for the confirmation
// of tool calls ids.
func awaitingTools(ids ...string) []run.Requirement {
	var reqs []run.Requirement
	for _, id := range ids {
		reqs = append(reqs, run.Requirement{ID: id, Kind: "confirmation",
			ToolExecution: &run.ToolExecution{ToolCallID: id, ToolName: "approve", RequiresConfirmation: true}})
	}
	return reqs
}

// pausedFrame reads the tool call ids a RunPaused frame awaits.
func pausedFrame(t *testing.T, f resumeFrame) []string {
	t.Helper()
	var ev run.Event
	if err := json.Unmarshal([]byte(f.data), &ev); err != nil {
		t.Fatalf("frame %+v: %v", f, err)
	}
	var ids []string
	for _, r := range ev.Requirements {
		ids = append(ids, r.ID)
	}
	for _, x := range ev.Tools {
		ids = append(ids, "tool:"+x.ToolCallID)
	}
	return ids
}

// A paused run continued outside the log that paused again waits for
// something else: a client holding the log's RunPaused (the first pause)
// gets the new pause built from the row, with what it awaits now and the
// next index as its id, instead of 204 (the row's PAUSED is not the pause
// it holds); reconnecting with that id gets 204.
func TestResume_ContinuedPausedRunPausedAgainSendsTheNewPause(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	u, srv := streamServerTail(t, d, scripted.Reply("unused"), runlog.TailConfig{Poll: 20 * time.Millisecond, Grace: 50 * time.Millisecond})
	const runID = "run-paused-twice"
	save := pausedRunInLog(t, d, srv, runID)
	save(run.StatusRunning, "")
	save(run.StatusPaused, "", "call-2")
	resume := u + "/agents/echo/runs/" + runID + "/resume"
	fs := resumeFrames(t, resume, "1")
	if len(fs) != 2 || fs[0].event != "replay" || fs[1].event != string(run.EventRunPaused) || fs[1].id != "2" ||
		!strings.Contains(fs[1].data, `"event_index":2`) || !slices.Equal(pausedFrame(t, fs[1]), []string{"call-2", "tool:call-2"}) {
		t.Fatalf("frames %+v, want replay and the second pause (RunPaused#2 awaiting call-2)", fs)
	}
	if res := get(t, resume, map[string]string{"Last-Event-ID": "2"}); res.status != http.StatusNoContent {
		t.Fatalf("client holding the second pause: %d %q", res.status, res.body)
	}
	// From the start: both pauses, in order.
	fs = resumeFrames(t, resume, "-1")
	var got []string
	for _, f := range fs {
		got = append(got, f.event+"#"+f.id)
	}
	if !slices.Equal(got, []string{"replay#", "RunStarted#0", "RunPaused#1", "RunPaused#2"}) {
		t.Fatalf("frames from the start %v", got)
	}
}

// A stream that began while the run, continued outside the log, was
// running ends with its next pause built from the row once it pauses
// again, not silently at the first pause the client holds.
func TestResume_LiveStreamOfAContinuedRunEndsWithItsNextPause(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	u, srv := streamServerTail(t, d, scripted.Reply("unused"), runlog.TailConfig{Poll: 20 * time.Millisecond, Grace: 50 * time.Millisecond})
	const runID = "run-paused-live"
	save := pausedRunInLog(t, d, srv, runID)
	save(run.StatusRunning, "")
	req, _ := http.NewRequest(http.MethodGet, u+"/agents/echo/runs/"+runID+"/resume", nil)
	req.Header.Set("Last-Event-ID", "1")
	s := openStream(t, func() (*http.Response, error) { return http.DefaultClient.Do(req) })
	if f, ok := s.next(t); !ok || f.event != "subscribed" {
		t.Fatalf("first frame %+v, want subscribed", f)
	}
	save(run.StatusPaused, "", "call-2")
	evs, _ := s.events(t, -1)
	if len(evs) != 1 || evs[0].event != string(run.EventRunPaused) || evs[0].id != "2" || !slices.Equal(pausedFrame(t, evs[0]), []string{"call-2", "tool:call-2"}) {
		t.Fatalf("events %+v, want RunPaused#2 awaiting call-2", evs)
	}
}

// A pause whose event was too large for the log is stored as a stub
// (runlog.TooLargeEvent, without the requirements): it cannot be told
// from the row's pause, and a pause built from the row would be as large,
// so a client holding the stub of a run still paused gets 204.
func TestResume_TooLargePauseStubOfAStandingPauseGetsNothingMore(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	u, srv := streamServerTail(t, d, scripted.Reply("unused"), runlog.TailConfig{Poll: 20 * time.Millisecond, Grace: 50 * time.Millisecond})
	ctx := context.Background()
	const runID = "run-paused-large"
	row, err := db.RunFromOutput(&run.Output{RunID: runID, SessionID: "sess-large", AgentID: "echo", Status: run.StatusPaused, Requirements: awaitingTools("call-1")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.SaveRun(ctx, &db.Session{SessionID: "sess-large", SessionType: run.TypeAgent, AgentID: "echo"}, row); err != nil {
		t.Fatal(err)
	}
	l, err := srv.events.of(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	stub, err := json.Marshal(runlog.TooLargeEvent(run.Event{Event: run.EventRunPaused, RunID: runID}, run.Event{}, runID, 1<<30))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, runID, 1, []runlog.Pending{{Event: string(run.EventRunPaused), Data: stub, Final: true}}, nil); err != nil {
		t.Fatal(err)
	}
	if res := get(t, u+"/agents/echo/runs/"+runID+"/resume", map[string]string{"Last-Event-ID": "0"}); res.status != http.StatusNoContent {
		t.Fatalf("client holding the stub of the standing pause: %d %q", res.status, res.body)
	}
}

// A background workflow run paused for a step's confirmation: its
// WorkflowPaused in the log is the row's pause (the same step awaited), so
// a client holding it gets 204, not a pause built again from the row.
// Continued outside the log, the run pauses at its next step: the client
// then gets that pause, built from the row with its step requirements.
func TestResume_PausedWorkflowRunHoldingItsPause(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	step := workflow.Step{Name: "review", Func: func(context.Context, *workflow.StepInput) (workflow.FuncResult, error) {
		return workflow.FuncResult{Content: "reviewed"}, nil
	}, HumanReview: &workflow.HumanReview{RequiresConfirmation: true}}
	second := step
	second.Name = "second review"
	wf, err := workflow.New(workflow.Config{ID: "flow", Name: "Flow", DB: d, Steps: []workflow.Step{step, second}})
	if err != nil {
		t.Fatal(err)
	}
	qc := queue.Config{PollInterval: 20 * time.Millisecond, LockGrace: 2 * time.Second}
	var srv *Server
	ts, _ := testServer(t, Config{Workflows: []*workflow.Workflow{wf}, Queue: &qc}, func(s *Server) {
		srv = s
		s.tailCfg = testTailConfig
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	acc := accepted(t, postForm(t, ts.URL+"/workflows/flow/runs", map[string]string{"message": "go", "background": "true"}, nil))
	waitStatus(t, d, acc.RunID, run.StatusPaused)
	l, err := srv.events.of(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	final := waitFinalEvent(t, srv, l, acc.RunID)
	resume := ts.URL + "/workflows/flow/runs/" + acc.RunID + "/resume"
	fs := resumeFrames(t, resume, "-1")
	if last := fs[len(fs)-1]; last.event != string(run.EventWorkflowPaused) || last.id != strconv.FormatInt(final, 10) || !strings.Contains(last.data, `"step_requirements"`) {
		t.Fatalf("stream ended with %+v, want WorkflowPaused#%d with its step requirements", last, final)
	}
	if res := get(t, resume, map[string]string{"Last-Event-ID": strconv.FormatInt(final, 10)}); res.status != http.StatusNoContent {
		t.Fatalf("client holding the standing pause: %d %q", res.status, res.body)
	}

	var paused run.Event
	if err := json.Unmarshal([]byte(fs[len(fs)-1].data), &paused); err != nil || len(paused.StepRequirements) != 1 {
		t.Fatalf("paused event %s: %v", fs[len(fs)-1].data, err)
	}
	answer := `[{"step_id":"` + paused.StepRequirements[0].StepID + `","confirmed":true}]`
	if res := postForm(t, ts.URL+"/workflows/flow/runs/"+acc.RunID+"/continue", map[string]string{"step_requirements": answer, "stream": "false"}, nil); res.status != http.StatusOK {
		t.Fatalf("continue: %d %s", res.status, res.body)
	}
	waitStatus(t, d, acc.RunID, run.StatusPaused)
	fs = resumeFrames(t, resume, strconv.FormatInt(final, 10))
	var again run.Event
	if len(fs) != 2 || fs[1].event != string(run.EventWorkflowPaused) || fs[1].id != strconv.FormatInt(final+1, 10) ||
		json.Unmarshal([]byte(fs[1].data), &again) != nil || len(again.StepRequirements) != 1 || again.StepRequirements[0].StepName != "second review" {
		t.Fatalf("after the first pause: %+v, want replay and WorkflowPaused#%d awaiting the second review", fs, final+1)
	}
	if res := get(t, resume, map[string]string{"Last-Event-ID": fs[1].id}); res.status != http.StatusNoContent {
		t.Fatalf("client holding the second pause: %d %q", res.status, res.body)
	}
}
