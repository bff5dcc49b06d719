package workflow

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

func TestRun_StructuredStepOutputReachesTheNextStepAsJSON(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`)
	planner, err := agent.New(agent.Config{ID: "planner", OutputSchema: schema,
		Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{Content: `{"title":"Go 1.26"}`}}})})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Model: scripted.Reply("written")}
	writer, err := agent.New(agent.Config{ID: "writer", Model: rec})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := New(Config{ID: "plan-write", Steps: []Step{{Name: "plan", Runner: planner}, {Name: "write", Runner: writer}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wf.Run(context.Background(), run.TextInput("a post")); err != nil {
		t.Fatal(err)
	}
	got := rec.inputs()
	if len(got) != 1 || got[0] != `{"title":"Go 1.26"}` {
		t.Fatalf("the writer step got %q, want the planner's structured output as JSON", got)
	}
}
