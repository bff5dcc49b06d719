package team

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// toolResults are the tool messages the leader was sent.
func toolResults(reqs [][]model.Message) string {
	var b strings.Builder
	for _, req := range reqs {
		for _, m := range req {
			if m.Role == model.RoleTool {
				b.WriteString(m.Content + "\n")
			}
		}
	}
	return b.String()
}

// storedTasks is the task list in session s's stored state.
func storedTasks(t *testing.T, d *db.DB, s string) (map[string]any, map[string]any) {
	t.Helper()
	row, err := d.GetSession(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	state, ok := db.SessionStateOf(row.SessionData)
	if !ok {
		t.Fatalf("session_data %s", row.SessionData)
	}
	l, _ := state[taskListKey].(map[string]any)
	if l == nil {
		t.Fatalf("session state %v has no %s", state, taskListKey)
	}
	return state, l
}

// A tasks-mode team run reads the task list from its session's state, as
// Agno loads it (load_task_list): the tasks of the session's earlier runs
// carry over. Each run started with an empty list and wrote over the
// session's; the list was not even written to the session row.
func TestTasks_ListCarriesAcrossTheRunsOfASession(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	w := mustAgent(t, agent.Config{ID: "writer", Model: scripted.Reply("x")})
	leader := &recorder{Model: script(
		match("plan it", call(toolCreateTask, map[string]any{"title": "Draft", "assignee": "writer"})),
		match("plan it", answer("planned")),
		match("go on", call(toolListTasks, map[string]any{})),
		match("go on", call(toolCreateTask, map[string]any{"title": "Review", "depends_on": []string{"t1"}})),
		match("go on", answer("more planned")))}
	tm := mustTeam(t, Config{ID: "tt", Mode: ModeTasks, MaxIterations: 1, Model: leader, Members: []*agent.Agent{w}, DB: d})
	for _, in := range []string{"plan it", "go on"} {
		if out, err := tm.Run(context.Background(), run.TextInput(in), agent.WithSessionID("s")); err != nil || out.Status != run.StatusCompleted {
			t.Fatalf("run %q = %+v, %v", in, out, err)
		}
	}
	if res := toolResults(leader.requests()); !strings.Contains(res, "[t1] Draft - PENDING") || !strings.Contains(res, "Task created: [t2] Review (status: blocked)") {
		t.Errorf("second run's tool results:\n%s", res)
	}
	_, l := storedTasks(t, d, "s")
	b, _ := json.Marshal(l["tasks"])
	if !strings.Contains(string(b), `"id":"t1"`) || !strings.Contains(string(b), `"id":"t2"`) {
		t.Errorf("stored tasks %s, want t1 and t2", b)
	}
}

// A task list a Python Agno run stored (random ids, parent_id, members this
// version does not know) is read and written back with everything it had.
func TestTasks_ReadsAListAgnoWrote(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	const data = `{"session_state":{"cart":"apples","_team_tasks":{"tasks":[{"id":"a1b2c3d4","title":"Gather","description":"","status":"completed",` +
		`"assignee":null,"parent_id":"p0","dependencies":[],"result":"facts","notes":[],"created_at":1733590000.5,"priority":"high"},` +
		`{"id":"e5f6a7b8","title":"Later","status":"blocked","dependencies":["a1b2c3d4"]}],"goal_complete":false,"completion_summary":null,"version":2}}}`
	if _, err := d.UpsertSession(context.Background(), &db.Session{SessionID: "s", SessionType: run.TypeTeam, TeamID: "tt", SessionData: json.RawMessage(data)}); err != nil {
		t.Fatal(err)
	}
	w := mustAgent(t, agent.Config{ID: "writer", Model: scripted.Reply("x")})
	leader := &recorder{Model: script(
		match("go on", call(toolListTasks, map[string]any{})),
		match("go on", call(toolCreateTask, map[string]any{"title": "Write", "depends_on": []string{"a1b2c3d4"}})),
		match("go on", answer("planned")))}
	tm := mustTeam(t, Config{ID: "tt", Mode: ModeTasks, MaxIterations: 1, Model: leader, Members: []*agent.Agent{w}, DB: d})
	if out, err := tm.Run(context.Background(), run.TextInput("go on"), agent.WithSessionID("s")); err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run = %+v, %v", out, err)
	}
	// Loaded as Agno's from_dict loads it: a blocked task whose
	// dependencies completed is pending.
	if res := toolResults(leader.requests()); !strings.Contains(res, "[a1b2c3d4] Gather - COMPLETED") || !strings.Contains(res, "[e5f6a7b8] Later - PENDING") ||
		!strings.Contains(res, "Task created: [t3] Write (status: pending)") {
		t.Errorf("tool results:\n%s", res)
	}
	state, l := storedTasks(t, d, "s")
	if state["cart"] != "apples" || l["version"] != float64(2) {
		t.Errorf("stored state %v", state)
	}
	tasks, _ := l["tasks"].([]any)
	if len(tasks) != 3 {
		t.Fatalf("stored tasks %v", tasks)
	}
	first := tasks[0].(map[string]any)
	if first["parent_id"] != "p0" || first["priority"] != "high" || first["result"] != "facts" || first["created_at"] != 1733590000.5 {
		t.Errorf("stored first task %v", first)
	}
}
