package team

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

func openPath(t *testing.T, path string) *db.DB {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// opsTeam is a team whose member "ops" deploys only after a confirmation;
// built anew on d as a restarted process would build it.
func opsTeam(t *testing.T, d *db.DB, mode Mode, ran *int32, leader *scripted.Model, extra ...*agent.Agent) *Team {
	t.Helper()
	ops := mustAgent(t, agent.Config{ID: "ops", Name: "Ops", DB: d, Tools: []tool.Tool{confirmTool(ran)},
		Model: script(call("deploy", map[string]any{}), answer("deployed it"))})
	return mustTeam(t, Config{ID: "crew", Mode: mode, Model: leader, Members: append(extra, ops), DB: d})
}

func confirmAll(reqs []run.Requirement) []run.Requirement {
	out := make([]run.Requirement, len(reqs))
	for i, r := range reqs {
		ex := *r.ToolExecution
		ex.Confirmed = boolp(true)
		r.ToolExecution = &ex
		out[i] = r
	}
	return out
}

func TestPause_MemberPausesTeamContinuedAfterRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentry.db")
	var ran int32
	leader := func() *scripted.Model {
		return script(call(ToolDelegate, map[string]any{"member_id": "ops", "task": "deploy v2"}), answer("ops deployed v2"))
	}
	ctx := context.Background()
	d1 := openPath(t, path)
	paused, err := opsTeam(t, d1, ModeCoordinate, &ran, leader()).Run(ctx, run.TextInput("ship it"), agent.WithSessionID("s"), agent.WithUserID("u1"))
	if err != nil || paused.Status != run.StatusPaused {
		t.Fatalf("first leg: %+v, %v", paused, err)
	}
	if len(paused.Requirements) != 1 {
		t.Fatalf("requirements %+v", paused.Requirements)
	}
	req := paused.Requirements[0]
	if req.MemberAgentID != "ops" || req.MemberAgentName != "Ops" || req.MemberRunID == "" || req.ToolExecution == nil || req.ToolExecution.ToolName != "deploy" || !req.ToolExecution.RequiresConfirmation {
		t.Fatalf("requirement %+v", req)
	}
	rows := rowsOf(t, d1, "s")
	if len(rows) != 2 || rows[paused.RunID].Status != run.StatusPaused || rows[req.MemberRunID].Status != run.StatusPaused || rows[req.MemberRunID].ParentRunID != paused.RunID {
		t.Fatalf("rows after pause: %+v", rows)
	}
	stored, _ := rows[paused.RunID].Output()
	if len(stored.Requirements) != 1 || stored.Requirements[0].MemberRunID != req.MemberRunID {
		t.Fatalf("stored requirements %+v", stored.Requirements)
	}
	if ran != 0 {
		t.Fatal("the tool ran before it was confirmed")
	}

	// A new process on the same file continues it, streamed.
	d2 := openPath(t, path)
	tm := opsTeam(t, d2, ModeCoordinate, &ran, leader())
	row, err := d2.GetRun(db.WithUserScope(ctx, "u1"), paused.RunID)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := row.Output()
	evs := collect(t, tm.ContinueStream(ctx, again, agent.WithRequirements(confirmAll(again.Requirements))))
	if evs[0].Event != "TeamRunContinued" || evs[len(evs)-1].Event != "TeamRunCompleted" || evs[len(evs)-1].Content != "ops deployed v2" {
		t.Fatalf("continued events: first %+v last %+v", evs[0], evs[len(evs)-1])
	}
	var memberContinued bool
	for _, e := range evs {
		memberContinued = memberContinued || (e.Event == run.EventRunContinued && e.AgentID == "ops" && e.RunID == req.MemberRunID)
	}
	if !memberContinued {
		t.Error("the member's RunContinued was not forwarded")
	}
	if ran != 1 {
		t.Errorf("deploy ran %d times", ran)
	}
	rows = rowsOf(t, d2, "s")
	if len(rows) != 2 || rows[paused.RunID].Status != run.StatusCompleted || rows[req.MemberRunID].Status != run.StatusCompleted {
		t.Fatalf("rows after continue: %d %+v", len(rows), rows)
	}
	final, _ := rows[paused.RunID].Output()
	if len(final.MemberResponses) != 1 || !strings.Contains(string(final.MemberResponses[0]), "deployed it") || len(final.Requirements) != 0 {
		t.Errorf("final team run member_responses %s requirements %+v", final.MemberResponses, final.Requirements)
	}
	for _, ex := range final.Tools {
		if ex.ToolName == ToolDelegate && ex.Confirmed != nil {
			t.Errorf("the member's resolution reached the leader's call (same call id): %+v", ex)
		}
	}
	if _, err := tm.ContinueRun(ctx, final); err == nil {
		t.Error("continuing a completed team run succeeded")
	}
}

func TestPause_BroadcastContinuesOnlyThePausedMember(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var ran int32
	echo := &recorder{Model: scripted.Reply("echo ready")}
	helper := mustAgent(t, agent.Config{ID: "echo", Name: "Echo", Model: echo, DB: d})
	tm := opsTeam(t, d, ModeBroadcast, &ran, script(call(ToolDelegateAll, map[string]any{"task": "get ready"}), answer("everyone is ready")), helper)
	ctx := context.Background()
	paused, err := tm.Run(ctx, run.TextInput("prepare"), agent.WithSessionID("s"))
	if err != nil || paused.Status != run.StatusPaused || len(paused.Requirements) != 1 {
		t.Fatalf("first leg %+v, %v", paused, err)
	}
	paused.Requirements = confirmAll(paused.Requirements) // resolved in place
	out, err := tm.ContinueRun(ctx, paused)
	if err != nil || out.Status != run.StatusCompleted || out.Content != "everyone is ready" {
		t.Fatalf("continued %s %v, %v", out.Status, out.Content, err)
	}
	for _, ex := range out.Tools {
		if ex.Confirmed != nil {
			t.Errorf("a member's in-place resolution reached the leader's call: %+v", ex)
		}
	}
	if n := len(echo.requests()); n != 1 {
		t.Errorf("the member that had completed ran %d times", n)
	}
	var result string
	for _, ex := range out.Tools {
		if ex.ToolName == ToolDelegateAll {
			result = ex.Result
		}
	}
	if result != "Agent Echo: echo ready\n\nAgent Ops: deployed it" {
		t.Errorf("broadcast result %q", result)
	}
	if len(out.MemberResponses) != 2 || len(rowsOf(t, d, "s")) != 3 {
		t.Errorf("member_responses %d", len(out.MemberResponses))
	}
}

func TestPause_TasksModeKeepsTheTaskList(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var ran int32
	leader := script(
		match("ship", call(toolCreateTask, map[string]any{"title": "Deploy", "assignee": "ops"})),
		match("ship", call(toolExecuteTask, map[string]any{"task_id": "t1", "member_id": "ops"})),
		match("ship", answer("deployed")))
	tm := opsTeam(t, d, ModeTasks, &ran, leader)
	ctx := context.Background()
	paused, err := tm.Run(ctx, run.TextInput("ship"), agent.WithSessionID("s"))
	if err != nil || paused.Status != run.StatusPaused {
		t.Fatalf("first leg %+v, %v", paused, err)
	}
	row, _ := d.GetRun(ctx, paused.RunID)
	stored, _ := row.Output()
	out, err := tm.ContinueRun(ctx, stored, agent.WithRequirements(confirmAll(stored.Requirements)))
	if err != nil || out.Status != run.StatusCompleted || out.Content != "deployed" {
		t.Fatalf("continued %s %v, %v", out.Status, out.Content, err)
	}
	l := out.SessionState[taskListKey].(map[string]any)
	tasks := l["tasks"].([]any)
	if len(tasks) != 1 || tasks[0].(map[string]any)["status"] != "completed" || tasks[0].(map[string]any)["result"] != "deployed it" {
		t.Errorf("task list %v", l)
	}
}

func TestPause_NestedTeamMemberPausesOuterTeam(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var ran int32
	inner := opsTeam(t, d, ModeRoute, &ran, script(call(ToolDelegate, map[string]any{"member_id": "ops", "task": "deploy"})))
	outer := mustTeam(t, Config{ID: "org", Model: script(call(ToolDelegate, map[string]any{"member_id": "crew", "task": "deploy"}), answer("org deployed")), Teams: []*Team{inner}, DB: d})
	ctx := context.Background()
	paused, err := outer.Run(ctx, run.TextInput("go"), agent.WithSessionID("s"))
	if err != nil || paused.Status != run.StatusPaused || len(paused.Requirements) != 1 || paused.Requirements[0].MemberAgentID != "crew" {
		t.Fatalf("first leg %+v, %v", paused, err)
	}
	out, err := outer.ContinueRun(ctx, paused, agent.WithRequirements(confirmAll(paused.Requirements)))
	if err != nil || out.Status != run.StatusCompleted || out.Content != "org deployed" || ran != 1 {
		t.Fatalf("continued %s %v, %v, ran %d", out.Status, out.Content, err, ran)
	}
	for _, r := range rowsOf(t, d, "s") {
		if r.Status != run.StatusCompleted {
			t.Errorf("row %s (%s%s) is %s", r.RunID, r.AgentID, r.TeamID, r.Status)
		}
	}
}

func TestPause_StreamEndsWithTeamRunPaused(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var ran int32
	tm := opsTeam(t, d, ModeCoordinate, &ran, script(call(ToolDelegate, map[string]any{"member_id": "ops", "task": "deploy"}), answer("done")))
	evs := collect(t, tm.Stream(context.Background(), run.TextInput("go"), agent.WithSessionID("s")))
	last := evs[len(evs)-1]
	if last.Event != "TeamRunPaused" || len(last.Requirements) != 1 || last.Requirements[0].MemberAgentID != "ops" || len(last.Tools) != 1 || last.Tools[0].ToolName != ToolDelegate {
		t.Fatalf("last event %+v", last)
	}
	var memberPaused bool
	for _, e := range evs {
		memberPaused = memberPaused || (e.Event == run.EventRunPaused && e.AgentID == "ops" && e.RunID == last.Requirements[0].MemberRunID)
		if e.Event == "TeamToolCallCompleted" {
			t.Errorf("the paused delegation completed: %+v", e)
		}
	}
	if !memberPaused {
		t.Error("the member's RunPaused was not forwarded")
	}
	row, err := d.GetRun(context.Background(), last.RunID)
	if err != nil || row.Status != run.StatusPaused {
		t.Fatalf("stored = %+v, %v", row, err)
	}
}

// twoCalls is one leader turn making two tool calls.
func twoCalls(name string, a, b map[string]any) scripted.Turn {
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: name, Args: a}, {Name: name, Args: b}}}
}

// A member holding two paused runs in one parallel call (two tasks of
// execute_tasks_parallel; two broadcasts in one turn): both pauses are the
// team run's requirements, and continuing (on a restarted team) resumes
// each member run with its own answer, running nothing twice.
func TestPause_MemberWithTwoPausedTasksInOneParallelCall(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{ModeTasks, ModeBroadcast} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "agentry.db")
			var ran int32
			echo := &recorder{Model: scripted.Reply("echo ready")}
			build := func(d *db.DB) *Team {
				helper := mustAgent(t, agent.Config{ID: "echo", Name: "Echo", Model: echo, DB: d})
				if mode == ModeTasks {
					return opsTeam(t, d, ModeTasks, &ran, script(
						match("ship", twoCalls(toolCreateTask, map[string]any{"title": "Deploy A", "assignee": "ops"}, map[string]any{"title": "Deploy B", "assignee": "ops"})),
						match("ship", call(toolExecuteTasks, map[string]any{"task_ids": []any{"t1", "t2"}})),
						match("ship", answer("shipped"))))
				}
				return opsTeam(t, d, ModeBroadcast, &ran, script(
					twoCalls(ToolDelegateAll, map[string]any{"task": "Deploy A"}, map[string]any{"task": "Deploy B"}),
					answer("shipped")), helper)
			}
			ctx := context.Background()
			paused, err := build(openPath(t, path)).Run(ctx, run.TextInput("ship"), agent.WithSessionID("s"))
			if err != nil || paused.Status != run.StatusPaused {
				t.Fatalf("first leg %s, %v", paused.Status, err)
			}
			if len(paused.Requirements) != 2 || paused.Requirements[0].MemberRunID == paused.Requirements[1].MemberRunID {
				t.Fatalf("requirements %+v: want one for each paused member run", paused.Requirements)
			}
			// Restarted: confirm the deploy of A, reject the deploy of B.
			d := openPath(t, path)
			tm := build(d)
			row, err := d.GetRun(ctx, paused.RunID)
			if err != nil {
				t.Fatal(err)
			}
			stored, _ := row.Output()
			task := map[string]string{}
			answers := confirmAll(stored.Requirements)
			for i, r := range answers {
				mr, err := d.GetRun(ctx, r.MemberRunID)
				if err != nil {
					t.Fatal(err)
				}
				mo, _ := mr.Output()
				task[r.MemberRunID] = run.ContentText(mo.Input.InputContent)
				if strings.HasPrefix(task[r.MemberRunID], "Deploy B") {
					answers[i].ToolExecution.Confirmed = boolp(false)
				}
			}
			out, err := tm.ContinueRun(ctx, stored, agent.WithRequirements(answers))
			if err != nil || out.Status != run.StatusCompleted || out.Content != "shipped" {
				t.Fatalf("continued %s %v, %v", out.Status, out.Content, err)
			}
			if ran != 1 {
				t.Errorf("the deploy ran %d times, want once (A confirmed, B rejected)", ran)
			}
			for id, in := range task {
				mr, err := d.GetRun(ctx, id)
				if err != nil || mr.Status != run.StatusCompleted {
					t.Fatalf("member run for %q: %v %v", in, mr, err)
				}
				mo, _ := mr.Output()
				want := strings.HasPrefix(in, "Deploy A")
				if len(mo.Tools) != 1 || mo.Tools[0].Confirmed == nil || *mo.Tools[0].Confirmed != want {
					t.Errorf("member run for %q: tools %+v, want confirmed %v", in, mo.Tools, want)
				}
			}
			var opsRuns, echoRuns int
			for _, r := range rowsOf(t, d, "s") {
				switch r.AgentID {
				case "ops":
					opsRuns++
				case "echo":
					echoRuns++
				}
			}
			if opsRuns != 2 {
				t.Errorf("%d ops runs, want the two paused ones resumed", opsRuns)
			}
			if mode == ModeBroadcast && (echoRuns != 2 || len(echo.requests()) != 2) {
				t.Errorf("echo: %d runs, %d model calls; want one per task", echoRuns, len(echo.requests()))
			}
		})
	}
}

// A team run paused without a journal and continued with one continues its
// member's paused run, by that run's id (a durable run derives a new member
// run's id from the delegation call, which the paused run does not have).
func TestPause_ContinuedDurablyTheMembersPausedRunGoesOn(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var ran int32
	tm := opsTeam(t, d, ModeCoordinate, &ran, script(call(ToolDelegate, map[string]any{"member_id": "ops", "task": "deploy v2"}), answer("ops deployed v2")))
	ctx := context.Background()
	paused, err := tm.Run(ctx, run.TextInput("ship it"), agent.WithSessionID("s"))
	if err != nil || paused.Status != run.StatusPaused || len(paused.Requirements) != 1 {
		t.Fatalf("%+v, %v", paused, err)
	}
	member := paused.Requirements[0].MemberRunID
	j, err := db.NewJournal(d)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tm.ContinueRun(ctx, paused, agent.WithRequirements(confirmAll(paused.Requirements)), agent.WithJournal(j, 1))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("%+v, %v", out, err)
	}
	rows := rowsOf(t, d, "s")
	if ran != 1 || len(rows) != 2 || rows[member] == nil || rows[member].Status != run.StatusCompleted {
		t.Fatalf("deploy ran %d times; rows %+v", ran, rows)
	}
}
