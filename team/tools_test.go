package team

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

func TestNew_ExtraToolsReachTheLeader(t *testing.T) {
	t.Parallel()
	note := tool.MustFunc(tool.FuncConfig{Name: "take_note", Description: "Takes a note."},
		func(context.Context, struct{}) (string, error) { return "noted", nil })
	leader := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "take_note"}}},
		{Content: "done"},
	}})
	w, err := agent.New(agent.Config{ID: "writer", Model: scripted.Reply("hi")})
	if err != nil {
		t.Fatal(err)
	}
	tm, err := New(Config{ID: "t", Model: leader, Members: []*agent.Agent{w}, Tools: []tool.Tool{note}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := tm.Run(context.Background(), run.TextInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Tools) != 1 || out.Tools[0].ToolName != "take_note" || out.Tools[0].Result != "noted" {
		t.Fatalf("leader tools = %+v", out.Tools)
	}
	if _, err := New(Config{ID: "t", Model: leader, Members: []*agent.Agent{w}, Tools: []tool.Tool{note, note}}); err == nil {
		t.Fatal("two tools with one name were accepted")
	}
}
