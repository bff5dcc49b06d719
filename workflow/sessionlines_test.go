package workflow

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// Workflow runs of one session that overlap in this process each read the
// session's state when they start and store it when they end: the run
// that stored last wrote the state it started from, plus its own changes,
// over the other's (a key the other set was lost), and two stores that
// read the session's metrics before either wrote lost one run's tokens.
// Every run now writes its changes over the last row written here. Both
// runs wait for each other in their first step, after their start read the
// session, on every driver.
func TestRun_OverlappingWorkflowRunsInOneSessionKeepEachOthersChanges(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		var arrived sync.WaitGroup
		arrived.Add(2)
		wait := Step{Name: "wait", Func: func(ctx context.Context, in *StepInput) (FuncResult, error) {
			in.State.Set("step-"+in.Input, true)
			arrived.Done()
			done := make(chan struct{})
			go func() { arrived.Wait(); close(done) }()
			select {
			case <-done:
				return FuncResult{Content: "met"}, nil
			case <-time.After(10 * time.Second):
				return FuncResult{}, context.DeadlineExceeded
			}
		}}
		wf := mustNew(t, Config{ID: "wf", DB: d, Steps: []Step{wait,
			{Name: "answer", Runner: newAgent(t, "answerer", scripted.Reply("an answer"), d)}}})
		var (
			mu   sync.Mutex
			wg   sync.WaitGroup
			want run.SessionMetrics
		)
		for _, in := range []string{"a", "b"} {
			wg.Go(func() {
				out, err := wf.Run(ctx, run.TextInput(in), agent.WithSessionID("s1"), agent.WithSessionState(map[string]any{"call-" + in: 1.0}))
				if err != nil || out.Status != run.StatusCompleted {
					t.Errorf("run %s: %v %+v", in, err, out)
					return
				}
				mu.Lock()
				want.AddRun(out.Metrics)
				mu.Unlock()
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		s, err := d.GetSession(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		var data struct {
			State   map[string]any  `json:"session_state"`
			Metrics json.RawMessage `json:"session_metrics"`
		}
		if err := json.Unmarshal(s.SessionData, &data); err != nil {
			t.Fatal(err)
		}
		wantState := map[string]any{"step-a": true, "step-b": true, "call-a": 1.0, "call-b": 1.0}
		if !reflect.DeepEqual(data.State, wantState) {
			t.Fatalf("session_state %v, want %v", data.State, wantState)
		}
		wb, _ := json.Marshal(want)
		if diff := jsontest.Diff(wb, data.Metrics); diff != "" || want.TotalTokens == 0 {
			t.Fatalf("session_metrics are not the two runs' sum: %s", diff)
		}
	})
}
