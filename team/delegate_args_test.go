package team

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// A delegation without a task (empty or blanks), to one member or to all,
// is a tool error that says what is missing, and no member runs: the
// member ran on an empty input and the leader read whatever it made of
// nothing.
func TestDelegate_EmptyTaskIsAToolErrorAndNoMemberRuns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, tool string
		args       map[string]any
		mode       Mode
	}{
		{"one member, empty", ToolDelegate, map[string]any{"member_id": "writer", "task": ""}, ModeCoordinate},
		{"one member, blanks", ToolDelegate, map[string]any{"member_id": "writer", "task": " \n\t"}, ModeCoordinate},
		{"all members", ToolDelegateAll, map[string]any{"task": "  "}, ModeBroadcast},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := openDB(t)
			member := &recorder{Model: scripted.Reply("a greeting")}
			w, err := agent.New(agent.Config{ID: "writer", Model: member, DB: d})
			if err != nil {
				t.Fatal(err)
			}
			leader := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{{Name: c.tool, Args: c.args}}},
				{Content: "done"},
			}})
			tm, err := New(Config{ID: "crew", Mode: c.mode, Model: leader, Members: []*agent.Agent{w}, DB: d})
			if err != nil {
				t.Fatal(err)
			}
			out, err := tm.Run(context.Background(), run.TextInput("go"))
			if err != nil || out.Status != run.StatusCompleted {
				t.Fatalf("run = %+v, %v", out, err)
			}
			if len(out.Tools) != 1 || !out.Tools[0].ToolCallError || !strings.Contains(out.Tools[0].Result, "task is empty") {
				t.Errorf("tools = %+v", out.Tools)
			}
			if n := len(member.requests()); n != 0 || len(out.MemberResponses) != 0 {
				t.Errorf("the member ran %d times (member_responses %s)", n, out.MemberResponses)
			}
		})
	}
}

// An unknown member id is repeated in the tool error only up to a bound:
// a model sending a 5,000-character id read it back in full.
func TestDelegate_UnknownMemberIDIsClippedInTheError(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	w, _ := agent.New(agent.Config{ID: "writer", Model: scripted.Reply("x"), DB: d})
	long := strings.Repeat("n", 5000)
	tm, err := New(Config{ID: "crew", Model: leaderScript(long), Members: []*agent.Agent{w}, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	out, err := tm.Run(context.Background(), run.TextInput("go"))
	if err != nil || len(out.Tools) != 1 {
		t.Fatalf("run = %+v, %v", out, err)
	}
	res := out.Tools[0].Result
	if !out.Tools[0].ToolCallError || !strings.Contains(res, "no member with id") || !strings.Contains(res, "members: writer") || len(res) > 400 {
		t.Errorf("tool error of %d bytes: %.300s", len(res), res)
	}
}
