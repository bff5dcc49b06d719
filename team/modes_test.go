package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

func TestRoute_MemberAnswerIsTheTeamAnswer(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	leader := &recorder{Model: script(call(ToolDelegate, map[string]any{"member_id": "billing", "task": "refund order 7"}), answer("the leader must not answer"))}
	sales := mustAgent(t, agent.Config{ID: "sales", Model: scripted.Reply("sales here"), DB: d})
	billing := mustAgent(t, agent.Config{ID: "billing", Model: scripted.Reply("refund issued"), DB: d})
	tm := mustTeam(t, Config{ID: "desk", Mode: ModeRoute, Model: leader, Members: []*agent.Agent{sales, billing}, DB: d})
	for _, stream := range []bool{false, true} {
		var out *run.Output
		if stream {
			evs := collect(t, tm.Stream(context.Background(), run.TextInput("refund please"), agent.WithSessionID("s-stream")))
			last := evs[len(evs)-1]
			if last.Event != "TeamRunCompleted" || last.Content != "refund issued" {
				t.Fatalf("last event = %+v", last)
			}
			row, err := d.GetRun(context.Background(), last.RunID)
			if err != nil {
				t.Fatal(err)
			}
			out, _ = row.Output()
		} else {
			var err error
			out, err = tm.Run(context.Background(), run.TextInput("refund please"), agent.WithSessionID("s-run"))
			if err != nil {
				t.Fatal(err)
			}
		}
		if out.Content != "refund issued" || out.Status != run.StatusCompleted || len(out.MemberResponses) != 1 {
			t.Fatalf("stream=%v: team run = %+v", stream, out)
		}
	}
	// The leader asked once per run: the member's answer ended each run.
	if n := len(leader.requests()); n != 2 {
		t.Errorf("leader requests = %d, want 2", n)
	}
}

// barrierModel answers only once n members are asking at the same time, so
// a broadcast that ran members one after another would never finish.
type barrierModel struct {
	model.Model
	wg *sync.WaitGroup
}

func (b barrierModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	b.wg.Done()
	b.wg.Wait()
	return b.Model.Stream(ctx, req)
}

func TestBroadcast_MembersRunConcurrentlyAnswersInMemberOrder(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var wg sync.WaitGroup
	wg.Add(3)
	var members []*agent.Agent
	for _, id := range []string{"a", "b", "c"} {
		members = append(members, mustAgent(t, agent.Config{ID: id, Name: strings.ToUpper(id), Model: barrierModel{scripted.Reply("answer " + id), &wg}, DB: d}))
	}
	leader := script(call(ToolDelegateAll, map[string]any{"task": "vote"}), answer("all voted"))
	tm := mustTeam(t, Config{ID: "council", Mode: ModeBroadcast, Model: leader, Members: members, DB: d})
	evs := collect(t, tm.Stream(context.Background(), run.TextInput("vote now"), agent.WithSessionID("s")))
	teamRunID := evs[0].RunID
	var result string
	starts := map[string]bool{}
	for _, e := range evs {
		if e.Event == "TeamToolCallCompleted" {
			result = e.Tool.Result
		}
		if e.Event == run.EventRunStarted && e.ParentRunID == teamRunID {
			starts[e.AgentID] = true
		}
	}
	if result != "Agent A: answer a\n\nAgent B: answer b\n\nAgent C: answer c" {
		t.Errorf("delegate_task_to_members result = %q", result)
	}
	if len(starts) != 3 {
		t.Errorf("forwarded RunStarted of members %v", starts)
	}
	rows := rowsOf(t, d, "s")
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	stored, _ := rows[teamRunID].Output()
	if len(stored.MemberResponses) != 3 {
		t.Errorf("member_responses = %d", len(stored.MemberResponses))
	}
	for id, r := range rows {
		if id != teamRunID && (r.ParentRunID != teamRunID || r.Status != run.StatusCompleted) {
			t.Errorf("member row %+v", r)
		}
	}
}

func TestTasks_IteratesWithTaskEvents(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	writer := mustAgent(t, agent.Config{ID: "writer", Model: scripted.Reply("a poem"), DB: d})
	leader := &recorder{Model: script(
		match("poem please", call(toolCreateTask, map[string]any{"title": "Write a poem", "assignee": "writer"})),
		match("poem please", answer("first pass done")), // iteration 1 ends with the task pending
		match("current_task_state", call(toolExecuteTask, map[string]any{"task_id": "t1", "member_id": "writer"})),
		match("current_task_state", call(toolMarkComplete, map[string]any{"summary": "poem written"})),
		match("current_task_state", answer("Here is the poem.")),
	)}
	tm := mustTeam(t, Config{ID: "studio", Mode: ModeTasks, Model: leader, Members: []*agent.Agent{writer}, DB: d})
	evs := collect(t, tm.Stream(context.Background(), run.TextInput("a poem please"), agent.WithSessionID("s")))
	teamRunID := evs[0].RunID
	got := names(evs, teamRunID)
	want := []run.EventType{"TeamRunStarted", "TeamTaskIterationStarted",
		"TeamToolCallStarted", "TeamTaskCreated", "TeamToolCallCompleted",
		"TeamTaskStateUpdated", "TeamTaskIterationCompleted", "TeamTaskIterationStarted",
		"TeamToolCallStarted", "TeamTaskUpdated", "TeamTaskUpdated", "TeamToolCallCompleted",
		"TeamToolCallStarted", "TeamToolCallCompleted",
		"TeamTaskStateUpdated", "TeamTaskIterationCompleted", "TeamRunContentCompleted", "TeamRunCompleted"}
	if !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	var updates []string
	var final *run.TaskEvent
	for _, e := range evs {
		switch e.Event {
		case run.EventTeamTaskUpdated:
			updates = append(updates, e.PreviousStatus+">"+e.Status)
		case run.EventTeamTaskStateUpdated:
			final = e.TaskEvent
		case run.EventTeamTaskIterationStarted:
			if e.MaxIterations != 10 || e.TeamID != "studio" {
				t.Errorf("iteration event %+v", e)
			}
		}
	}
	if !slices.Equal(updates, []string{"pending>in_progress", "in_progress>completed"}) {
		t.Errorf("task updates %v", updates)
	}
	if final == nil || final.GoalComplete == nil || !*final.GoalComplete || len(final.Tasks) != 1 || final.Tasks[0].Status != "completed" || *final.Tasks[0].Result != "a poem" {
		t.Errorf("final state %+v", final)
	}
	// Iteration 2 began with the task state as a user message.
	reqs := leader.requests()
	last := reqs[2][len(reqs[2])-1]
	if last.Role != model.RoleUser || !strings.Contains(last.Content, "<current_task_state>") || !strings.Contains(last.Content, "[t1] Write a poem - PENDING") {
		t.Errorf("iteration 2 message = %+v", last)
	}
	row, err := d.GetRun(context.Background(), teamRunID)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := row.Output()
	if out.Content != "Here is the poem." || len(out.MemberResponses) != 1 {
		t.Errorf("team run = %+v", out)
	}
	b, _ := json.Marshal(out.SessionState[taskListKey])
	if !strings.Contains(string(b), `"goal_complete":true`) {
		t.Errorf("stored task list %s", b)
	}
}

func TestTasks_StopsAtMaxIterations(t *testing.T) {
	t.Parallel()
	w := mustAgent(t, agent.Config{ID: "w", Model: scripted.Reply("x")})
	leader := &recorder{Model: script(
		match("begin now", call(toolCreateTask, map[string]any{"title": "never done"})),
		match("begin now", call(toolAddNote, map[string]any{"task_id": "t1", "note": "looked into it"})),
		match("begin now", answer("still working")),
		match("current_task_state", answer("still working")))}
	tm := mustTeam(t, Config{Mode: ModeTasks, MaxIterations: 3, Model: leader, Members: []*agent.Agent{w}})
	out, err := tm.Run(context.Background(), run.TextInput("begin now"))
	if err != nil || out.Status != run.StatusCompleted || out.Content != "still working" {
		t.Fatalf("run = %+v, %v", out, err)
	}
	// create_task, add_task_note, answer (iteration 1), then one answer per
	// iteration 2 and 3.
	reqs := leader.requests()
	if len(reqs) != 5 {
		t.Fatalf("leader requests = %d, want 5", len(reqs))
	}
	if last := reqs[4][len(reqs[4])-1]; !strings.Contains(last.Content, "Note: looked into it") {
		t.Errorf("iteration 3 message = %q", last.Content)
	}
}

func TestNested_TeamOfTeamsStoresParentage(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	poet := mustAgent(t, agent.Config{ID: "poet", Model: scripted.Reply("roses"), DB: d})
	inner := mustTeam(t, Config{ID: "writers", Name: "Writers", Model: script(call(ToolDelegate, map[string]any{"member_id": "poet", "task": "a verse"}), answer("inner: roses")), Members: []*agent.Agent{poet}, DB: d})
	outer := mustTeam(t, Config{ID: "company", Model: script(call(ToolDelegate, map[string]any{"member_id": "writers", "task": "write"}), answer("outer: roses")), Teams: []*Team{inner}, DB: d})
	evs := collect(t, outer.Stream(context.Background(), run.TextInput("go"), agent.WithSessionID("s")))
	outerID := evs[0].RunID
	rows := rowsOf(t, d, "s")
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	var innerRow, poetRow string
	for id, r := range rows {
		switch {
		case r.TeamID == "writers":
			innerRow = id
			if r.ParentRunID != outerID {
				t.Errorf("inner team row parent %q", r.ParentRunID)
			}
		case r.AgentID == "poet":
			poetRow = id
		}
	}
	if rows[poetRow].ParentRunID != innerRow || innerRow == "" {
		t.Errorf("poet row parent %q, inner %q", rows[poetRow].ParentRunID, innerRow)
	}
	// The poet's and the inner team's events reach the outer stream.
	var sawPoet, sawInner bool
	for _, e := range evs {
		sawPoet = sawPoet || (e.AgentID == "poet" && e.Event == run.EventRunCompleted)
		sawInner = sawInner || (e.TeamID == "writers" && e.Event == "TeamRunCompleted" && e.ParentRunID == outerID)
	}
	if !sawPoet || !sawInner {
		t.Errorf("forwarded poet=%v inner=%v", sawPoet, sawInner)
	}
	out, _ := rows[outerID].Output()
	if out.Content != "outer: roses" || len(out.MemberResponses) != 1 {
		t.Errorf("outer run %+v", out)
	}
}

func TestNew_RefusesNestingPastTheLimit(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, agent.Config{ID: "a", Model: scripted.Reply("x")})
	tm := mustTeam(t, Config{ID: "level1", Model: scripted.Reply("x"), Members: []*agent.Agent{a}})
	for i := 2; i <= MaxNestingDepth; i++ {
		tm = mustTeam(t, Config{ID: "level" + string(rune('0'+i)), Model: scripted.Reply("x"), Teams: []*Team{tm}})
	}
	_, err := New(Config{ID: "too-deep", Model: scripted.Reply("x"), Teams: []*Team{tm}})
	if !errors.Is(err, ErrNestingTooDeep) || !strings.Contains(err.Error(), "the limit is 4") {
		t.Fatalf("err = %v", err)
	}
	if _, err := New(Config{Model: scripted.Reply("x"), Members: []*agent.Agent{a}, Mode: "swarm"}); err == nil || !strings.Contains(err.Error(), `unknown mode "swarm"`) {
		t.Errorf("bad mode err = %v", err)
	}
}

func TestStreamMemberEventsOff_OnlyTeamEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tm := mustTeam(t, Config{ID: "quiet", Model: leaderScript("writer"), Members: f.team.Members(), StreamMemberEvents: boolp(false)})
	for _, e := range collect(t, tm.Stream(context.Background(), run.TextInput("hi"))) {
		if e.ParentRunID != "" || e.AgentID != "" {
			t.Errorf("member event on a quiet team's stream: %+v", e)
		}
	}
}

func TestMemberResponses_WithoutDBAndNotStored(t *testing.T) {
	t.Parallel()
	w := mustAgent(t, agent.Config{ID: "writer", Model: scripted.Reply("hello")})
	nodb := mustTeam(t, Config{Model: leaderScript("writer"), Members: []*agent.Agent{w}})
	out, err := nodb.Run(context.Background(), run.TextInput("go"))
	if err != nil || len(out.MemberResponses) != 1 || !strings.Contains(string(out.MemberResponses[0]), `"parent_run_id":"`+out.RunID+`"`) {
		t.Fatalf("no-db team run member_responses = %s, %v", out.MemberResponses, err)
	}
	d := openDB(t)
	notStored := mustTeam(t, Config{ID: "ns", Model: leaderScript("writer"), Members: []*agent.Agent{w}, DB: d, StoreMemberResponses: boolp(false)})
	out, err = notStored.Run(context.Background(), run.TextInput("go"))
	if err != nil || len(out.MemberResponses) != 1 {
		t.Fatalf("returned member_responses = %d, %v", len(out.MemberResponses), err)
	}
	row, err := d.GetRun(context.Background(), out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := row.Output()
	if len(stored.MemberResponses) != 0 {
		t.Errorf("stored member_responses = %d, want 0 (store_member_responses false)", len(stored.MemberResponses))
	}
}

// A task created depending on an id no task has stays blocked (fail-closed,
// as Agno's task list): create_task's answer says so, naming the id, so
// the model can create it or fix the dependency. It said only "blocked".
func TestTasks_UnknownDependencyIsNamedInTheAnswer(t *testing.T) {
	t.Parallel()
	w := mustAgent(t, agent.Config{ID: "w", Model: scripted.Reply("done")})
	leader := &recorder{Model: script(
		match("plan it", call(toolCreateTask, map[string]any{"title": "ship", "depends_on": []any{"t9"}})),
		match("plan it", answer("planned")))}
	tm := mustTeam(t, Config{Mode: ModeTasks, MaxIterations: 1, Model: leader, Members: []*agent.Agent{w}})
	if _, err := tm.Run(context.Background(), run.TextInput("plan it")); err != nil {
		t.Fatal(err)
	}
	reqs := leader.requests()
	if len(reqs) < 2 {
		t.Fatalf("leader requests = %d", len(reqs))
	}
	got := reqs[1][len(reqs[1])-1].Content
	if !strings.Contains(got, "status: blocked") || !strings.Contains(got, "t9") || !strings.Contains(got, "no task has") {
		t.Errorf("create_task answered %q", got)
	}
}

// The tasks waiting on others follow them as in Agno's task list: a failure
// fails the chain of tasks depending on it (they stayed blocked for good,
// and the list never ended), a completed task set back to pending blocks
// its dependents again (they stayed pending and could be executed first).
func TestTasks_DependentsFollowTheirDependencies(t *testing.T) {
	t.Parallel()
	tm := mustTeam(t, Config{Mode: ModeTasks, Model: scripted.Reply("x"), Members: []*agent.Agent{mustAgent(t, agent.Config{ID: "w", Model: scripted.Reply("done")})}})
	// Listed dependents first: the failure must go down the chain whatever
	// the order.
	l := &taskList{Tasks: []*task{
		{ID: "t3", Title: "c", Status: taskBlocked, Dependencies: []string{"t2"}},
		{ID: "t2", Title: "b", Status: taskBlocked, Dependencies: []string{"t1"}},
		{ID: "t1", Title: "a", Status: taskPending},
		{ID: "t4", Title: "d", Status: taskBlocked, Dependencies: []string{"t1", "t9"}},
	}}
	status := func() string {
		var b strings.Builder
		for _, tk := range l.Tasks {
			fmt.Fprintf(&b, "%s=%s ", tk.ID, tk.Status)
		}
		return b.String()
	}
	ctx := context.Background()
	done := "ok"
	tm.setStatus(ctx, l, l.Tasks[2], taskCompleted, &done)
	if got := status(); got != "t3=blocked t2=pending t1=completed t4=blocked " {
		t.Fatalf("after t1 completed: %s", got)
	}
	tm.setStatus(ctx, l, l.Tasks[2], taskPending, nil)
	if got := status(); got != "t3=blocked t2=blocked t1=pending t4=blocked " {
		t.Fatalf("after t1 set back to pending: %s", got)
	}
	failed := "broke"
	tm.setStatus(ctx, l, l.Tasks[2], taskFailed, &failed)
	if got := status(); got != "t3=failed t2=failed t1=failed t4=failed " {
		t.Fatalf("after t1 failed: %s", got)
	}
	if r := l.Tasks[0].Result; r == nil || *r != "Automatically failed: a dependency failed." {
		t.Errorf("t3's result %v", r)
	}
}
