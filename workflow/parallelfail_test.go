package workflow

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
)

// When several branches of a Parallel fail, the run's error names the
// first failed branch in branch order; the stored run's content and the
// WorkflowError event named whichever branch failed last (here the first
// second branch fails after the first), so that the three disagreed, and which
// one the stored run named depended on timing. They name the first.
func TestParallel_SeveralFailedBranchesAreToldInBranchOrder(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		d := openDB(t)
		firstFailed := make(chan struct{})
		first := Step{Name: "first", Func: func(context.Context, *StepInput) (FuncResult, error) {
			defer close(firstFailed)
			return FuncResult{}, errors.New("first broke")
		}}
		second := Step{Name: "second", Func: func(context.Context, *StepInput) (FuncResult, error) {
			<-firstFailed
			time.Sleep(50 * time.Millisecond) // the first branch's failure recorded
			return FuncResult{}, errors.New("second broke")
		}}
		wf := mustNew(t, Config{ID: "par", DB: d, Steps: []Step{{Name: "p", Parallel: &Parallel{Steps: []Step{first, second}}}}})
		var (
			runID, told string
			err         error
		)
		if streamed {
			for ev, e := range wf.Stream(context.Background(), run.TextInput("go"), agent.WithSessionID("s")) {
				if e != nil {
					err = e
				}
				runID = ev.RunID
				if ev.Event == run.EventWorkflowError {
					told = ev.Error
				}
			}
			if !strings.Contains(told, "first broke") {
				t.Errorf("WorkflowError %q, want the first branch's failure", told)
			}
		} else {
			var out *run.Output
			out, err = wf.Run(context.Background(), run.TextInput("go"), agent.WithSessionID("s"))
			if err == nil || !strings.Contains(err.Error(), "first broke") {
				t.Errorf("run error %v, want the first branch's failure", err)
			}
			runID = out.RunID
			if c, _ := out.Content.(string); !strings.Contains(c, "first broke") {
				t.Errorf("streamed %v: run content %q, want the first branch's failure", streamed, c)
			}
		}
		_, stored := storedRun(t, d, runID)
		if c, _ := stored.Content.(string); stored.Status != run.StatusError || !strings.Contains(c, "first broke") {
			t.Errorf("streamed %v: stored %s %q, want the first branch's failure", streamed, stored.Status, c)
		}
	}
}
