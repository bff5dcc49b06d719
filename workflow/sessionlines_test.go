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
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/memory"
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
	testdbs.Each(t, func(t *testing.T, d *db.DB) { overlappingWorkflowRuns(t, d, d) })
}

// Workflow runs of one session on two handles of one database (processes
// sharing it: no line in common) create and save the session row
// conditionally (db.Session.Expect), so neither drops the other's state
// keys or tokens.
func TestRun_OverlappingWorkflowRunsOnTwoHandlesOfOneDatabaseKeepEachOthersChanges(t *testing.T) {
	t.Parallel()
	testdbs.EachTwins(t, overlappingWorkflowRuns)
}

// overlappingWorkflowRuns runs two workflow runs of session s1 that overlap
// (each waits in a step for the other), one on handle da and one on dbb,
// and checks the session keeps both runs' state keys and tokens.
func overlappingWorkflowRuns(t *testing.T, da, dbb *db.DB) {
	d := da // the session is read back through one of them
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
	wfs := map[string]*Workflow{}
	for in, d := range map[string]*db.DB{"a": da, "b": dbb} {
		wfs[in] = mustNew(t, Config{ID: "wf", DB: d, Steps: []Step{wait,
			{Name: "answer", Runner: newAgent(t, "answerer", scripted.Reply("an answer"), d)}}})
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		want run.SessionMetrics
	)
	for _, in := range []string{"a", "b"} {
		wg.Go(func() {
			out, err := wfs[in].Run(ctx, run.TextInput(in), agent.WithSessionID("s1"), agent.WithSessionState(map[string]any{"call-" + in: 1.0}))
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
}

// A workflow run's save reads the session and writes it with the run's
// changes: a write of another process between that read and the write (a
// state key, a name) was lost. The write is conditional on the row read;
// refused, the save reads the row again and writes its changes over it.
func TestRun_WorkflowSaveKeepsAnotherProcessesWriteBetweenItsReadAndWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mem := memory.New()
	other := db.New("other", mem)
	h := &dbtest.ReadHook{Driver: mem}
	d := db.New("wf", h)
	if _, err := other.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeWorkflow, WorkflowID: "wf",
		SessionData: json.RawMessage(`{"session_state":{"seed":1}}`)}); err != nil {
		t.Fatal(err)
	}
	last := Step{Name: "last", Func: func(ctx context.Context, in *StepInput) (FuncResult, error) {
		in.State.Set("mine", true)
		// The save's read is the next read of the session.
		h.Arm("s1", func() {
			if _, err := other.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeWorkflow, WorkflowID: "wf",
				SessionData: json.RawMessage(`{"session_name":"elsewhere","session_state":{"seed":1,"theirs":true}}`)}); err != nil {
				t.Error(err)
			}
		})
		return FuncResult{Content: "done"}, nil
	}}
	wf := mustNew(t, Config{ID: "wf", DB: d, Steps: []Step{last}})
	out, err := wf.Run(ctx, run.TextInput("go"), agent.WithSessionID("s1"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run: %v %+v", err, out)
	}
	s, err := other.GetSession(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Name  string         `json:"session_name"`
		State map[string]any `json:"session_state"`
	}
	if err := json.Unmarshal(s.SessionData, &data); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"seed": 1.0, "theirs": true, "mine": true}; data.Name != "elsewhere" || !reflect.DeepEqual(data.State, want) {
		t.Fatalf("session_data %s, want the name elsewhere and state %v", s.SessionData, want)
	}
}
