package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/workflow"
)

// A background workflow run paused by a failing step (on_error: pause)
// and continued outside its log with "retry" fails again at the same step:
// its row pauses again with the new failure (retry_count 1). A client
// holding the first WorkflowPaused is sent the new pause, built from the
// row with its error requirements (the failure's message and retry
// count), not told 204 as if the pause it holds still stood; once the
// retries are spent the step's failure ends the run, and the client
// holding the last pause is sent the WorkflowError.
func TestResume_WorkflowFailingAgainAfterContinueSendsTheNewFailure(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	var tries atomic.Int32
	step := workflow.Step{Name: "flaky", Func: func(context.Context, *workflow.StepInput) (workflow.FuncResult, error) {
		return workflow.FuncResult{}, errors.New("upstream down (try " + strconv.Itoa(int(tries.Add(1))) + ")")
	}, HumanReview: &workflow.HumanReview{OnError: workflow.OnErrorPause, MaxRetries: 2}}
	wf, err := workflow.New(workflow.Config{ID: "flow", Name: "Flow", DB: d, Steps: []workflow.Step{step}})
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
	held := strconv.FormatInt(final, 10)
	// The whole stream: it ends once the run is over (its job paused and
	// its execution here ended), with the pause.
	if fs := resumeFrames(t, resume, "-1"); fs[len(fs)-1].event != string(run.EventWorkflowPaused) || fs[len(fs)-1].id != held {
		t.Fatalf("stream ended with %+v, want WorkflowPaused#%s", fs[len(fs)-1], held)
	}
	if res := get(t, resume, map[string]string{"Last-Event-ID": held}); res.status != http.StatusNoContent {
		t.Fatalf("client holding the standing error pause: %d %q", res.status, res.body)
	}

	// Retried outside the log: the step fails again, the run pauses again.
	retry := `[{"step_id":"0","decision":"retry"}]`
	cont := ts.URL + "/workflows/flow/runs/" + acc.RunID + "/continue"
	if res := postForm(t, cont, map[string]string{"step_requirements": retry, "stream": "false"}, nil); res.status != http.StatusOK {
		t.Fatalf("continue: %d %s", res.status, res.body)
	}
	waitStatus(t, d, acc.RunID, run.StatusPaused)
	fs := resumeFrames(t, resume, held)
	if len(fs) != 2 || fs[1].event != string(run.EventWorkflowPaused) || fs[1].id != strconv.FormatInt(final+1, 10) {
		t.Fatalf("client holding the first pause after the step failed again: %+v, want the new WorkflowPaused#%d", fs, final+1)
	}
	var again struct {
		ErrorRequirements []run.ErrorRequirement `json:"error_requirements"`
	}
	if err := json.Unmarshal([]byte(fs[1].data), &again); err != nil || len(again.ErrorRequirements) != 1 ||
		again.ErrorRequirements[0].RetryCount != 1 || !strings.Contains(again.ErrorRequirements[0].ErrorMessage, "try 2") {
		t.Fatalf("the new pause %s does not tell the new failure (%v)", fs[1].data, err)
	}
	held = fs[1].id
	if res := get(t, resume, map[string]string{"Last-Event-ID": held}); res.status != http.StatusNoContent {
		t.Fatalf("client holding the new pause: %d %q", res.status, res.body)
	}

	// The retries are spent: the step's failure ends the run.
	if res := postForm(t, cont, map[string]string{"step_requirements": retry, "stream": "false"}, nil); res.status != http.StatusOK ||
		decode[run.Output](t, res).Status != run.StatusError {
		t.Fatalf("continue with the retries spent: %d %s, want the run ERROR", res.status, res.body)
	}
	waitStatus(t, d, acc.RunID, run.StatusError)
	fs = resumeFrames(t, resume, held)
	if len(fs) != 2 || fs[1].event != string(run.EventWorkflowError) || !strings.Contains(fs[1].data, "try 3") {
		t.Fatalf("client holding the last pause after the run failed: %+v, want its WorkflowError", fs)
	}
}
