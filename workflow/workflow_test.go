package workflow

import (
	"context"
	"errors"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
)

// recorder keeps the last user message of every request a model receives.
type recorder struct {
	model.Model
	mu    sync.Mutex
	users []string
}

func (r *recorder) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	r.mu.Lock()
	for _, msg := range req.Backward() {
		if msg.Role == model.RoleUser {
			r.users = append(r.users, msg.Content)
			break
		}
	}
	r.mu.Unlock()
	return r.Model.Stream(ctx, req)
}

func (r *recorder) inputs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.users...)
}

func openDB(t *testing.T) *db.DB {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func newAgent(t *testing.T, id string, m model.Model, d *db.DB) *agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{ID: id, Model: m, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

type fixture struct {
	db       *db.DB
	wf       *Workflow
	reviewer *recorder
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	d := openDB(t)
	rev := &recorder{Model: scripted.Reply("looks good")}
	wf, err := New(Config{ID: "draft-review", Name: "Draft and review", DB: d, Steps: []Step{
		{Name: "draft", Runner: newAgent(t, "drafter", scripted.Reply("a first draft"), d)},
		{Runner: newAgent(t, "reviewer", rev, d)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{db: d, wf: wf, reviewer: rev}
}

func runsOf(t *testing.T, d *db.DB, sessionID string) []db.Run {
	t.Helper()
	rows, _, err := d.GetRuns(context.Background(), db.RunFilter{SessionID: sessionID, Limit: 100, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestRun_PassesEachStepsContentToTheNextAndStoresRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	out, err := f.wf.Run(ctx, run.TextInput("write about Go"), agent.WithSessionID("s1"), agent.WithUserID("u1"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != run.StatusCompleted || out.Content != "looks good" || out.WorkflowID != "draft-review" || out.AgentID != "" {
		t.Fatalf("workflow run = %+v", out)
	}
	if in := f.reviewer.inputs(); len(in) != 1 || in[0] != "a first draft" {
		t.Errorf("reviewer input = %q, want the draft", in)
	}
	rows := runsOf(t, f.db, "s1")
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	var steps []string
	for _, r := range rows {
		switch r.RunType {
		case run.TypeWorkflow:
			if r.RunID != out.RunID || r.WorkflowID != "draft-review" || r.ParentRunID != "" || r.Status != run.StatusCompleted || r.UserID != "u1" {
				t.Errorf("workflow row = %+v", r)
			}
			if !strings.Contains(string(r.RunData), `"step_results"`) {
				t.Errorf("run_data has no step_results: %s", r.RunData)
			}
		case run.TypeAgent:
			if r.ParentRunID != out.RunID || r.UserID != "u1" {
				t.Errorf("step row = %+v", r)
			}
			steps = append(steps, r.AgentID)
		}
	}
	if len(steps) != 2 {
		t.Errorf("step rows = %v", steps)
	}
	s, err := f.db.GetSession(ctx, "s1")
	if err != nil || s.SessionType != run.TypeWorkflow || s.WorkflowID != "draft-review" || s.AgentID != "" {
		t.Errorf("session = %+v, %v", s, err)
	}
}

func TestStream_EmitsAgnoWorkflowEventsAroundTheStepsEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var names []string
	var last run.Event
	for ev, err := range f.wf.Stream(context.Background(), run.TextInput("go")) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Event {
		case run.EventWorkflowStarted, run.EventStepStarted, run.EventStepCompleted, run.EventWorkflowCompleted, run.EventRunCompleted:
			names = append(names, string(ev.Event)+":"+ev.StepName)
		}
		last = ev
	}
	want := "WorkflowStarted: StepStarted:draft RunCompleted: StepCompleted:draft StepStarted:reviewer RunCompleted: StepCompleted:reviewer WorkflowCompleted:"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	if last.Event != run.EventWorkflowCompleted || last.Content != "looks good" || last.WorkflowID != "draft-review" || last.RunID == "" {
		t.Errorf("last event = %+v", last)
	}
	// As Agno's WorkflowCompletedEvent, it carries the run's step_results.
	if len(last.StepResults) != 2 || last.StepResults[0].StepName != "draft" || last.StepResults[1].Content != "looks good" {
		t.Errorf("WorkflowCompleted step_results = %+v", last.StepResults)
	}
}

func TestRun_TeamStepStoresTeamAndMemberRowsUnderTheWorkflowRun(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	member := newAgent(t, "writer", scripted.Reply("member text"), d)
	tm, err := team.New(team.Config{ID: "t1", DB: d, Members: []*agent.Agent{member}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: team.ToolDelegate, Args: map[string]any{"member_id": "writer", "task": "write"}}}},
		{Content: "team text"},
	}})})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := New(Config{ID: "wf", DB: d, Steps: []Step{{Runner: tm}}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := wf.Run(context.Background(), run.TextInput("go"), agent.WithSessionID("s"))
	if err != nil || out.Content != "team text" {
		t.Fatalf("run = %+v, %v", out, err)
	}
	byType := map[run.Type]db.Run{}
	for _, r := range runsOf(t, d, "s") {
		byType[r.RunType] = r
	}
	if byType[run.TypeTeam].ParentRunID != out.RunID || byType[run.TypeAgent].ParentRunID != byType[run.TypeTeam].RunID {
		t.Errorf("rows = %+v", byType)
	}
	if s, _ := d.GetSession(context.Background(), "s"); s == nil || s.SessionType != run.TypeWorkflow {
		t.Errorf("session = %+v", s)
	}
}

func TestRun_AFailingStepEndsTheWorkflowInError(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	next := &recorder{Model: scripted.Reply("never")}
	bad := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{Error: "boom", ErrorKind: "server"}}})
	wf, err := New(Config{ID: "wf", DB: d, Steps: []Step{{Runner: newAgent(t, "bad", bad, d)}, {Runner: newAgent(t, "next", next, d)}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []run.EventType
	for ev, err := range wf.Stream(context.Background(), run.TextInput("go"), agent.WithSessionID("s")) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Event)
	}
	if n := len(got); n < 2 || got[n-2] != run.EventStepError || got[n-1] != run.EventWorkflowError {
		t.Errorf("events = %v", got)
	}
	if len(next.inputs()) != 0 {
		t.Error("the step after the failing one ran")
	}
	for _, r := range runsOf(t, d, "s") {
		if r.RunType == run.TypeWorkflow && r.Status != run.StatusError {
			t.Errorf("workflow row = %+v", r)
		}
	}
	out, err := wf.Run(context.Background(), run.TextInput("go"))
	if err == nil || out.Status != run.StatusError || !strings.Contains(out.ContentString(), "step bad") {
		t.Errorf("Run = %+v, %v", out, err)
	}
}

func TestNew_RejectsBadSteps(t *testing.T) {
	t.Parallel()
	a := newAgent(t, "a", scripted.Reply("x"), nil)
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "at least one step") {
		t.Errorf("no steps: %v", err)
	}
	if _, err := New(Config{Steps: []Step{{Name: "empty"}}}); err == nil || !strings.Contains(err.Error(), "Runner is nil") {
		t.Errorf("empty step: %v", err)
	}
	wf, err := New(Config{Name: "My Flow", Steps: []Step{{Runner: a}}})
	if err != nil || wf.ID() != "my-flow" || wf.Steps()[0].Name != "a" {
		t.Errorf("defaults: %v %+v", err, wf)
	}
}

func TestCancelRun_StopsTheStepAndStoresCancelled(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	slow := scripted.MustNew(scripted.Config{Latency: time.Minute, Turns: []scripted.Turn{{Content: "late"}}})
	wf, err := New(Config{ID: "wf", DB: d, Steps: []Step{{Runner: newAgent(t, "slow", slow, d)}}})
	if err != nil {
		t.Fatal(err)
	}
	// Run ids are unique in the process (the run registry's key): other
	// tests' workflows, also named wf, must not share this one's.
	runID := "r1-" + uuid.NewString()
	go func() {
		for !wf.CancelRun(runID) {
			time.Sleep(5 * time.Millisecond)
		}
	}()
	out, err := wf.Run(context.Background(), run.TextInput("go"), agent.WithRunID(runID), agent.WithSessionID("s"))
	if err == nil || out.Status != run.StatusCancelled {
		t.Fatalf("run = %+v, %v", out, err)
	}
	row, err := d.GetRun(context.Background(), runID)
	if err != nil || row.Status != run.StatusCancelled {
		t.Errorf("row = %+v, %v", row, err)
	}
}

func TestRun_CancelledBeforeStartIsStoredCancelled(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	wf, err := New(Config{ID: "wf", DB: d, Steps: []Step{{Runner: newAgent(t, "a", scripted.Reply("x"), d)}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("stopped by the caller"))
	runID := "r1-" + uuid.NewString()
	out, err := wf.Run(ctx, run.TextInput("go"), agent.WithRunID(runID), agent.WithSessionID("s"))
	if err == nil || out == nil || out.Status != run.StatusCancelled {
		t.Fatalf("run = %+v, %v", out, err)
	}
	// Like an agent's, a workflow run that was cancelled before its first step
	// is still recorded, so whoever cancelled it finds it CANCELLED.
	row, err := d.GetRun(context.Background(), runID)
	if err != nil || row.Status != run.StatusCancelled {
		t.Fatalf("row = %+v, %v", row, err)
	}
	if steps := countSteps(t, d, "s"); steps != 0 {
		t.Errorf("%d step runs were stored; no step should have started", steps)
	}
}

func countSteps(t *testing.T, d *db.DB, sessionID string) int {
	t.Helper()
	rows, _, err := d.GetRuns(context.Background(), db.RunFilter{SessionID: sessionID, RunType: run.TypeAgent, Limit: 100, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}
