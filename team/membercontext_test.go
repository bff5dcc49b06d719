package team

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// lastUsers is the text of the last user message of each request.
func lastUsers(reqs [][]model.Message) []string {
	out := make([]string, 0, len(reqs))
	for _, req := range reqs {
		for i := len(req) - 1; i >= 0; i-- {
			if req[i].Role == model.RoleUser {
				out = append(out, req[i].Content)
				break
			}
		}
	}
	return out
}

// AddTeamHistoryToMembers puts the team's last completed runs of the
// session (input and answer) before each member's task, in Agno's
// <team_history_context> layout; the run in progress and runs that did not
// complete are not in it, and NumTeamHistoryRuns bounds it.
func TestTeam_AddTeamHistoryToMembers(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		rec := &recorder{Model: script(answer("member answer"))}
		member := mustAgent(t, agent.Config{ID: "m", Model: rec, DB: d})
		leader := script(
			match("one", call(ToolDelegate, map[string]any{"member_id": "m", "task": "task one"})), match("one", answer("team one")),
			match("two", call(ToolDelegate, map[string]any{"member_id": "m", "task": "task two"})), match("two", answer("team two")),
			match("three", call(ToolDelegate, map[string]any{"member_id": "m", "task": "task three"})), match("three", answer("team three")))
		tm := mustTeam(t, Config{ID: "t", Model: leader, Members: []*agent.Agent{member}, DB: d,
			AddTeamHistoryToMembers: true, NumTeamHistoryRuns: 2})
		for _, in := range []string{"one", "two", "three"} {
			if out, err := tm.Run(context.Background(), run.TextInput(in), agent.WithSessionID("s")); err != nil || out.Status != run.StatusCompleted {
				t.Fatalf("team run %s: %v", in, err)
			}
		}
		// A team run in another session is not this session's history.
		if _, err := tm.Run(context.Background(), run.TextInput("one"), agent.WithSessionID("elsewhere")); err != nil {
			t.Fatal(err)
		}
		got := lastUsers(rec.requests())
		want := []string{
			"task one",
			"<team_history_context>\n[run-1]\ninput: one\nresponse: team one\n\n</team_history_context>\n\n\ntask two",
			"<team_history_context>\n[run-1]\ninput: one\nresponse: team one\n\n[run-2]\ninput: two\nresponse: team two\n\n</team_history_context>\n\n\ntask three",
			"task one",
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("member tasks:\n got %q\nwant %q", got, want)
		}
	})
}

// NumTeamHistoryRuns keeps the last runs only, and a run that did not
// complete is not history.
func TestTeam_TeamHistoryToMembersKeepsTheLastCompletedRuns(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	rec := &recorder{Model: script(answer("member answer"))}
	member := mustAgent(t, agent.Config{ID: "m", Model: rec, DB: d})
	leader := script(
		match("one", answer("team one")), match("two", answer("team two")),
		match("three", call(ToolDelegate, map[string]any{"member_id": "m", "task": "task three"})), match("three", answer("team three")))
	tm := mustTeam(t, Config{ID: "t", Model: leader, Members: []*agent.Agent{member}, DB: d,
		AddTeamHistoryToMembers: true, NumTeamHistoryRuns: 1})
	ctx := context.Background()
	for _, in := range []string{"one", "two"} {
		if _, err := tm.Run(ctx, run.TextInput(in), agent.WithSessionID("s"), agent.WithRunID("run-"+in)); err != nil {
			t.Fatal(err)
		}
	}
	// The newest completed run ends in error afterwards: it is not history.
	r, err := d.GetRun(ctx, "run-two")
	if err != nil {
		t.Fatal(err)
	}
	r.Status = run.StatusError
	if _, err := d.UpsertRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Run(ctx, run.TextInput("three"), agent.WithSessionID("s")); err != nil {
		t.Fatal(err)
	}
	want := "<team_history_context>\n[run-1]\ninput: one\nresponse: team one\n\n</team_history_context>\n\n\ntask three"
	if got := lastUsers(rec.requests()); len(got) != 1 || got[0] != want {
		t.Errorf("member task %q, want %q", got, want)
	}
}

// ShareMemberInteractions puts the member runs the team run made before
// (member name, task, answer) before the next member's task, in Agno's
// <member_interaction_context> layout.
func TestTeam_ShareMemberInteractions(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	first := mustAgent(t, agent.Config{ID: "first", Name: "First One", Model: script(answer("answer a")), DB: d})
	rec := &recorder{Model: script(answer("answer b"))}
	second := mustAgent(t, agent.Config{ID: "second", Model: rec, DB: d})
	leader := script(call(ToolDelegate, map[string]any{"member_id": "first", "task": "task a"}),
		call(ToolDelegate, map[string]any{"member_id": "second", "task": "task b"}), answer("done"))
	tm := mustTeam(t, Config{ID: "t", Model: leader, Members: []*agent.Agent{first, second}, DB: d, ShareMemberInteractions: true})
	if _, err := tm.Run(context.Background(), run.TextInput("go"), agent.WithSessionID("s")); err != nil {
		t.Fatal(err)
	}
	want := "<member_interaction_context>\nSee below interactions with other team members.\nMember: First One\nTask: task a\nResponse: answer a\n\n</member_interaction_context>\n\n\ntask b"
	if got := lastUsers(rec.requests()); len(got) != 1 || got[0] != want {
		t.Errorf("member task %q, want %q", got, want)
	}
}

// DetermineInputForMembers false sends a delegated member the team run's
// input, not the leader's task.
func TestTeam_DetermineInputForMembersFalse(t *testing.T) {
	t.Parallel()
	rec := &recorder{Model: script(answer("ok"))}
	member := mustAgent(t, agent.Config{ID: "m", Model: rec})
	leader := script(call(ToolDelegate, map[string]any{"member_id": "m", "task": "the leader's rewording"}), answer("done"))
	tm := mustTeam(t, Config{ID: "t", Model: leader, Members: []*agent.Agent{member}, DetermineInputForMembers: boolp(false)})
	if _, err := tm.Run(context.Background(), run.TextInput("the user's own words")); err != nil {
		t.Fatal(err)
	}
	if got := lastUsers(rec.requests()); len(got) != 1 || got[0] != "the user's own words" {
		t.Errorf("member input %q", got)
	}
}

func TestNew_RefusesBadMemberContextSettings(t *testing.T) {
	t.Parallel()
	m := mustAgent(t, agent.Config{ID: "m", Model: script(answer("x"))})
	for name, cfg := range map[string]Config{
		"team history without a database":              {AddTeamHistoryToMembers: true},
		"negative NumTeamHistoryRuns":                  {NumTeamHistoryRuns: -1},
		"DetermineInputForMembers false in tasks mode": {Mode: ModeTasks, DetermineInputForMembers: boolp(false)},
	} {
		cfg.Model, cfg.Members = script(answer("x")), []*agent.Agent{m}
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A broadcast's members run concurrently: each reads the team history and
// the interactions recorded so far while the others record theirs (run
// with -race). The second run's tasks carry the first run.
func TestTeam_MemberContextUnderBroadcast(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	recs := []*recorder{{Model: script(answer("a says"))}, {Model: script(answer("b says"))}, {Model: script(answer("c says"))}}
	var members []*agent.Agent
	for i, id := range []string{"a", "b", "c"} {
		members = append(members, mustAgent(t, agent.Config{ID: id, Model: recs[i], DB: d}))
	}
	leader := script(call(ToolDelegateAll, map[string]any{"task": "all of you"}), answer("together"))
	tm := mustTeam(t, Config{ID: "t", Model: leader, Members: members, DB: d, Mode: ModeBroadcast,
		AddTeamHistoryToMembers: true, ShareMemberInteractions: true})
	for range 2 {
		if out, err := tm.Run(context.Background(), run.TextInput("go"), agent.WithSessionID("s")); err != nil || out.Status != run.StatusCompleted {
			t.Fatalf("team run: %v", err)
		}
	}
	for i, r := range recs {
		got := lastUsers(r.requests())
		if len(got) != 2 || !strings.HasSuffix(got[0], "all of you") ||
			!strings.Contains(got[1], "<team_history_context>\n[run-1]\ninput: go\nresponse: together\n\n</team_history_context>\n\n\nall of you") {
			t.Errorf("member %d tasks %q", i, got)
		}
	}
}

// A shared interaction's task is the text the member was given, as Agno's
// (_process_delegate_task_to_member records the formatted task): with
// DetermineInputForMembers false, the user's input (it was the leader's
// rewording, which no member saw); after earlier interactions, the task
// with their block.
func TestTeam_SharedInteractionsRecordTheTaskTheMemberGot(t *testing.T) {
	t.Parallel()
	first := mustAgent(t, agent.Config{ID: "first", Model: script(answer("answer a"))})
	second := mustAgent(t, agent.Config{ID: "second", Model: script(answer("answer b"))})
	rec := &recorder{Model: script(answer("answer c"))}
	third := mustAgent(t, agent.Config{ID: "third", Model: rec})
	leader := script(call(ToolDelegate, map[string]any{"member_id": "first", "task": "rewording a"}),
		call(ToolDelegate, map[string]any{"member_id": "second", "task": "rewording b"}),
		call(ToolDelegate, map[string]any{"member_id": "third", "task": "rewording c"}), answer("done"))
	tm := mustTeam(t, Config{ID: "t", Model: leader, Members: []*agent.Agent{first, second, third},
		ShareMemberInteractions: true, DetermineInputForMembers: boolp(false)})
	if _, err := tm.Run(context.Background(), run.TextInput("own words")); err != nil {
		t.Fatal(err)
	}
	firstBlock := "<member_interaction_context>\nSee below interactions with other team members.\nMember: first\nTask: own words\nResponse: answer a\n\n</member_interaction_context>\n"
	secondGot := firstBlock + "\n\nown words"
	want := "<member_interaction_context>\nSee below interactions with other team members.\nMember: first\nTask: own words\nResponse: answer a\n\n" +
		"Member: second\nTask: " + secondGot + "\nResponse: answer b\n\n</member_interaction_context>\n\n\nown words"
	if got := lastUsers(rec.requests()); len(got) != 1 || got[0] != want {
		t.Errorf("third member's task\n got %q\nwant %q", got, want)
	}
}

// A continued team run shows its members the interactions of the member
// runs it made before it paused: they were kept in the paused attempt's
// memory only, so a member delegated to after the continue was shown none
// of them.
func TestTeam_SharedInteractionsSurviveAPause(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	var ran int32
	first := mustAgent(t, agent.Config{ID: "first", Name: "First", Model: script(answer("answer a")), DB: d})
	ops := mustAgent(t, agent.Config{ID: "ops", Name: "Ops", DB: d, Tools: []tool.Tool{confirmTool(&ran)},
		Model: script(call("deploy", map[string]any{}), answer("deployed it"))})
	rec := &recorder{Model: script(answer("answer c"))}
	third := mustAgent(t, agent.Config{ID: "third", Model: rec, DB: d})
	leader := script(call(ToolDelegate, map[string]any{"member_id": "first", "task": "task a"}),
		call(ToolDelegate, map[string]any{"member_id": "ops", "task": "deploy"}),
		call(ToolDelegate, map[string]any{"member_id": "third", "task": "task c"}), answer("done"))
	tm := mustTeam(t, Config{ID: "t", Model: leader, Members: []*agent.Agent{first, ops, third}, DB: d, ShareMemberInteractions: true})
	ctx := context.Background()
	paused, err := tm.Run(ctx, run.TextInput("go"), agent.WithSessionID("s"))
	if err != nil || paused.Status != run.StatusPaused {
		t.Fatalf("first leg: %+v, %v", paused, err)
	}
	out, err := tm.ContinueRun(ctx, paused, agent.WithRequirements(confirmAll(paused.Requirements)))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("continued: %+v, %v", out, err)
	}
	want := "<member_interaction_context>\nSee below interactions with other team members.\n" +
		"Member: First\nTask: task a\nResponse: answer a\n\n" +
		"Member: Ops\nTask: <member_interaction_context>\nSee below interactions with other team members.\nMember: First\nTask: task a\nResponse: answer a\n\n</member_interaction_context>\n\n\ndeploy\nResponse: deployed it\n\n" +
		"</member_interaction_context>\n\n\ntask c"
	if got := lastUsers(rec.requests()); len(got) != 1 || got[0] != want {
		t.Errorf("third member's task\n got %q\nwant %q", got, want)
	}
}

// A completed team run stored without an input (a run_data with no input
// member, as older and Python-written rows may be) is history with its
// answer only: reading it failed every delegation of the session's runs
// (the member never ran).
func TestTeam_TeamHistoryToMembersReadsARunStoredWithoutInput(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeTeam, TeamID: "t"}); err != nil {
			t.Fatal(err)
		}
		old := &run.Output{RunID: "old", TeamID: "t", SessionID: "s", Status: run.StatusCompleted, Content: "old answer", ContentType: "str", CreatedAt: 1}
		row, err := db.RunFromOutput(old)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.UpsertRun(ctx, row); err != nil {
			t.Fatal(err)
		}
		rec := &recorder{Model: script(answer("member answer"))}
		member := mustAgent(t, agent.Config{ID: "m", Model: rec, DB: d})
		leader := script(call(ToolDelegate, map[string]any{"member_id": "m", "task": "task one"}), answer("team one"))
		tm := mustTeam(t, Config{ID: "t", Model: leader, Members: []*agent.Agent{member}, DB: d, AddTeamHistoryToMembers: true})
		out, err := tm.Run(ctx, run.TextInput("one"), agent.WithSessionID("s"))
		if err != nil || out.Status != run.StatusCompleted {
			t.Fatalf("team run: %v", err)
		}
		if len(out.Tools) != 1 || out.Tools[0].Result != "member answer" {
			t.Fatalf("the delegation's result: %+v", out.Tools)
		}
		want := "<team_history_context>\n[run-1]\nresponse: old answer\n\n</team_history_context>\n\n\ntask one"
		if got := lastUsers(rec.requests()); len(got) != 1 || got[0] != want {
			t.Errorf("member task %q, want %q", got, want)
		}
	})
}
