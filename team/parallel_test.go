package team

import (
	"context"
	"errors"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// slowModel waits d before answering, so that members finish in an order
// other than the tasks'.
type slowModel struct {
	model.Model
	d time.Duration
}

func (s slowModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	select {
	case <-time.After(s.d):
	case <-ctx.Done():
	}
	return s.Model.Stream(ctx, req)
}

// parallelLeader creates t1 (for a) and t2 (for b), runs both with
// execute_tasks_parallel, marks the goal complete and answers.
func parallelLeader() *scripted.Model {
	return script(
		match("plan", call(toolCreateTask, map[string]any{"title": "Research", "assignee": "a"})),
		match("plan", call(toolCreateTask, map[string]any{"title": "Draft", "description": "a first draft", "assignee": "b"})),
		match("plan", call(toolExecuteTasks, map[string]any{"task_ids": []string{"t1", "t2"}})),
		match("plan", call(toolMarkComplete, map[string]any{"summary": "both done"})),
		match("plan", answer("finished")))
}

// TestTasksParallel_RunConcurrentlyEventsInTaskOrder: execute_tasks_parallel
// runs its tasks at the same time (each member waits for the other to have
// started), reports them in task_ids order although the second finishes
// first, and emits TeamTaskUpdated in the documented order.
func TestTasksParallel_RunConcurrentlyEventsInTaskOrder(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var wg sync.WaitGroup
	wg.Add(2)
	a := mustAgent(t, agent.Config{ID: "a", Model: barrierModel{slowModel{scripted.Reply("facts"), 30 * time.Millisecond}, &wg}, DB: d})
	b := mustAgent(t, agent.Config{ID: "b", Model: barrierModel{scripted.Reply("draft"), &wg}, DB: d})
	tm := mustTeam(t, Config{ID: "studio", Mode: ModeTasks, Model: parallelLeader(), Members: []*agent.Agent{a, b}, DB: d})
	done := make(chan []run.Event)
	go func() {
		done <- collect(t, tm.Stream(context.Background(), run.TextInput("plan it"), agent.WithSessionID("s")))
	}()
	var evs []run.Event
	select {
	case evs = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the tasks did not run concurrently (each member waits for the other)")
	}
	teamRunID := evs[0].RunID
	var updates []string
	var result string
	var memberDone []string
	for _, e := range evs {
		switch {
		case e.Event == run.EventTeamTaskUpdated:
			updates = append(updates, e.TaskID+":"+e.Status)
		case e.Event == "TeamToolCallCompleted" && e.Tool.ToolName == toolExecuteTasks:
			result = e.Tool.Result
		case e.Event == run.EventRunCompleted && e.ParentRunID == teamRunID:
			memberDone = append(memberDone, e.AgentID)
		}
	}
	if want := []string{"t1:in_progress", "t2:in_progress", "t1:completed", "t2:completed"}; !slices.Equal(updates, want) {
		t.Errorf("TeamTaskUpdated order %v, want %v", updates, want)
	}
	if result != "Task [t1] completed. Result: facts\nTask [t2] completed. Result: draft" {
		t.Errorf("execute_tasks_parallel result %q", result)
	}
	if !slices.Equal(memberDone, []string{"b", "a"}) {
		t.Logf("members finished in order %v (b first was intended)", memberDone)
	}
	row, err := d.GetRun(context.Background(), teamRunID)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := row.Output()
	if out.Status != run.StatusCompleted || len(out.MemberResponses) != 2 {
		t.Fatalf("stored team run %s, %d member_responses", out.Status, len(out.MemberResponses))
	}
	tasks := out.SessionState[taskListKey].(map[string]any)["tasks"].([]any)
	for i, want := range []string{"facts", "draft"} {
		tk := tasks[i].(map[string]any)
		if tk["status"] != "completed" || tk["result"] != want {
			t.Errorf("task %d = %v", i, tk)
		}
	}
}

// TestTasksParallel_RefusesBadTaskListsRunningNothing: an unknown, blocked,
// unassigned or repeated task makes the call a tool error the leader reads,
// and no member runs.
func TestTasksParallel_RefusesBadTaskListsRunningNothing(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		setup []scripted.Turn
		ids   []string
		want  string
	}{
		"unknown":    {nil, []string{"t9"}, `task with id "t9" not found`},
		"empty":      {nil, []string{}, "task_ids is empty"},
		"unassigned": {[]scripted.Turn{call(toolCreateTask, map[string]any{"title": "x"})}, []string{"t1"}, "has no assignee"},
		"repeated":   {[]scripted.Turn{call(toolCreateTask, map[string]any{"title": "x", "assignee": "a"})}, []string{"t1", "t1"}, "listed twice"},
		"blocked": {[]scripted.Turn{call(toolCreateTask, map[string]any{"title": "x", "assignee": "a"}),
			call(toolCreateTask, map[string]any{"title": "y", "assignee": "a", "depends_on": []string{"t1"}})}, []string{"t2"}, "is blocked"},
		// A failed task is not blocked by anything: the error says how to retry it.
		"failed": {[]scripted.Turn{call(toolCreateTask, map[string]any{"title": "x", "assignee": "a"}),
			call(toolUpdateTask, map[string]any{"task_id": "t1", "status": "failed"})}, []string{"t1"}, "task t1 is failed: set it back to pending with update_task_status to run it again"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			turns := append(c.setup, call(toolExecuteTasks, map[string]any{"task_ids": c.ids}), answer("gave up"))
			member := &recorder{Model: scripted.Reply("x")}
			tm := mustTeam(t, Config{Mode: ModeTasks, MaxIterations: 1, Model: script(turns...), Members: []*agent.Agent{mustAgent(t, agent.Config{ID: "a", Model: member})}})
			out, err := tm.Run(context.Background(), run.TextInput("go"))
			if err != nil {
				t.Fatal(err)
			}
			var ex *run.ToolExecution
			for i := range out.Tools {
				if out.Tools[i].ToolName == toolExecuteTasks {
					ex = &out.Tools[i]
				}
			}
			if ex == nil || !ex.ToolCallError || !strings.Contains(ex.Result, c.want) {
				t.Errorf("execute_tasks_parallel = %+v, want an error with %q", ex, c.want)
			}
			if n := len(member.requests()); n != 0 || len(out.MemberResponses) != 0 {
				t.Errorf("member ran %d times", n)
			}
		})
	}
}

// TestTasksParallel_CancelStopsEveryMember: a cancel while parallel tasks
// run cancels every member run; all end CANCELLED and no task is failed.
func TestTasksParallel_CancelStopsEveryMember(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	m1, m2 := newBlocking(), newBlocking()
	a := mustAgent(t, agent.Config{ID: "a", Model: m1, DB: d})
	b := mustAgent(t, agent.Config{ID: "b", Model: m2, DB: d})
	tm := mustTeam(t, Config{ID: "studio", Mode: ModeTasks, Model: parallelLeader(), Members: []*agent.Agent{a, b}, DB: d})
	go func() {
		<-m1.started
		<-m2.started
		if !tm.CancelRun("run-p") {
			t.Error("CancelRun did not find the run")
		}
	}()
	out, err := tm.Run(context.Background(), run.TextInput("plan it"), agent.WithRunID("run-p"), agent.WithSessionID("s"))
	if !errors.Is(err, context.Canceled) || out.Status != run.StatusCancelled {
		t.Fatalf("run = %v, %v", out.Status, err)
	}
	rows := rowsOf(t, d, "s")
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	for _, r := range rows {
		if r.Status != run.StatusCancelled {
			t.Errorf("row %s (%s%s) is %s", r.RunID, r.AgentID, r.TeamID, r.Status)
		}
	}
	stored, _ := rows["run-p"].Output()
	for _, tk := range stored.SessionState[taskListKey].(map[string]any)["tasks"].([]any) {
		if s := tk.(map[string]any)["status"]; s == taskFailed {
			t.Errorf("task %v failed on cancel", tk)
		}
	}
}

// TestMaxConcurrentMembers_BoundsParallelTasks: with MaxConcurrentMembers 1
// the tasks of one execute_tasks_parallel call run one at a time.
func TestMaxConcurrentMembers_BoundsParallelTasks(t *testing.T) {
	t.Parallel()
	var running, peak atomic.Int32
	gauge := func(reply string) model.Model {
		return gaugeModel{scripted.Reply(reply), &running, &peak}
	}
	a := mustAgent(t, agent.Config{ID: "a", Model: gauge("facts")})
	b := mustAgent(t, agent.Config{ID: "b", Model: gauge("draft")})
	tm := mustTeam(t, Config{Mode: ModeTasks, MaxConcurrentMembers: 1, Model: parallelLeader(), Members: []*agent.Agent{a, b}})
	out, err := tm.Run(context.Background(), run.TextInput("plan it"))
	if err != nil || out.Status != run.StatusCompleted || len(out.MemberResponses) != 2 {
		t.Fatalf("run %v, %v", out, err)
	}
	if p := peak.Load(); p != 1 {
		t.Errorf("peak concurrent member model calls = %d, want 1", p)
	}
	if _, err := New(Config{Model: parallelLeader(), Members: []*agent.Agent{a}, MaxConcurrentMembers: -1}); err == nil {
		t.Error("New accepted MaxConcurrentMembers -1")
	}
}

// gaugeModel counts the calls in progress and keeps their peak.
type gaugeModel struct {
	model.Model
	running, peak *atomic.Int32
}

func (g gaugeModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	n := g.running.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	time.Sleep(20 * time.Millisecond)
	g.running.Add(-1)
	return g.Model.Stream(ctx, req)
}

// TestTasksParallel_PauseOfOneTaskContinuedAfterRestart: one task's member
// pauses for a confirmation while the other completes; the team run is
// stored PAUSED; continued from the database by a team built anew, only the
// paused member goes on, the completed task is reported, not run again.
func TestTasksParallel_PauseOfOneTaskContinuedAfterRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentry.db")
	var ran int32
	echo := &recorder{Model: scripted.Reply("echo ready")}
	build := func(d *db.DB) *Team {
		helper := mustAgent(t, agent.Config{ID: "echo", Name: "Echo", Model: echo, DB: d})
		leader := script(
			match("ship", call(toolCreateTask, map[string]any{"title": "Warm up", "assignee": "echo"})),
			match("ship", call(toolCreateTask, map[string]any{"title": "Deploy", "assignee": "ops"})),
			match("ship", call(toolExecuteTasks, map[string]any{"task_ids": []string{"t1", "t2"}})),
			match("ship", call(toolMarkComplete, map[string]any{"summary": "shipped"})),
			match("ship", answer("shipped")))
		return opsTeam(t, d, ModeTasks, &ran, leader, helper)
	}
	ctx := context.Background()
	d1 := openPath(t, path)
	paused, err := build(d1).Run(ctx, run.TextInput("ship"), agent.WithSessionID("s"))
	if err != nil || paused.Status != run.StatusPaused || len(paused.Requirements) != 1 || paused.Requirements[0].MemberAgentID != "ops" {
		t.Fatalf("first leg %+v, %v", paused, err)
	}
	d1.Close()

	d2 := openPath(t, path)
	row, err := d2.GetRun(ctx, paused.RunID)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := row.Output()
	out, err := build(d2).ContinueRun(ctx, stored, agent.WithRequirements(confirmAll(stored.Requirements)))
	if err != nil || out.Status != run.StatusCompleted || out.Content != "shipped" {
		t.Fatalf("continued %s %v, %v", out.Status, out.Content, err)
	}
	if ran != 1 || len(echo.requests()) != 1 {
		t.Errorf("deploy ran %d times, echo asked %d times; want once each", ran, len(echo.requests()))
	}
	var result string
	for _, ex := range out.Tools {
		if ex.ToolName == toolExecuteTasks && ex.Result != "" {
			result = ex.Result
		}
	}
	if result != "Task [t1] completed. Result: echo ready\nTask [t2] completed. Result: deployed it" {
		t.Errorf("execute_tasks_parallel result after continue %q", result)
	}
	tasks := out.SessionState[taskListKey].(map[string]any)["tasks"].([]any)
	for _, tk := range tasks {
		if tk.(map[string]any)["status"] != taskCompleted {
			t.Errorf("task %v", tk)
		}
	}
}
