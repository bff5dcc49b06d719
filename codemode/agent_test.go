package codemode_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

const parallelThenDependent = `const [p, r] = await Promise.all([get_weather({city: "Paris"}), get_weather({city: "Rome"})])
const diff = await compare({a: r.temp_c, b: p.temp_c})
;({warmer: diff > 0 ? r.city : p.city, diff})`

func TestAgent_ToolCallsMadeFromCodeAreRecordedInTheRun(t *testing.T) {
	t.Parallel()
	store := db.New("", memory.New())
	cm := newCM(t, codemode.Config{})
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "execute", Args: map[string]any{"code": parallelThenDependent}}}},
		{Content: "Rome is warmer."},
	}})
	a, err := agent.New(agent.Config{Name: "analyst", Model: m, Tools: cm.Tools(), DB: store, StoreEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.Run(context.Background(), run.TextInput("which is warmer?"), agent.WithSessionID("s1"), agent.WithUserID("u1"))
	if err != nil {
		t.Fatal(err)
	}
	row, err := store.GetRun(context.Background(), out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := row.Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ex := range stored.Tools {
		names = append(names, ex.ToolName)
	}
	if strings.Join(names, " ") != "get_weather get_weather compare execute" {
		t.Fatalf("stored tools = %v, want three calls and the execute that made them", names)
	}
	for _, ex := range stored.Tools[:3] {
		if ex.ToolCallError || ex.Result == "" || len(ex.ToolArgs) == 0 || ex.Metrics == nil || ex.ToolCallID == "" {
			t.Errorf("nested call recorded without its outcome: %+v", ex)
		}
	}
	var args []string
	for _, ex := range stored.Tools[:2] {
		args = append(args, string(ex.ToolArgs))
	}
	slices.Sort(args)
	if strings.Join(args, " ") != `{"city":"Paris"} {"city":"Rome"}` || string(stored.Tools[2].ToolArgs) != `{"a":25,"b":21.5}` {
		t.Errorf("arguments = %v, %s", args, stored.Tools[2].ToolArgs)
	}
	var cell codemode.Cell
	if err := json.Unmarshal([]byte(stored.Tools[3].Result), &cell); err != nil || cell.Status != codemode.StatusOK ||
		string(cell.Result) != `{"warmer":"Rome","diff":3.5}` {
		t.Fatalf("execute result = %s (%v)", stored.Tools[3].Result, err)
	}
	// The model sees its own call only.
	var toolMsgs []string
	for _, msg := range stored.Messages {
		if msg.Role == model.RoleTool {
			toolMsgs = append(toolMsgs, msg.ToolName)
		}
	}
	if strings.Join(toolMsgs, " ") != "execute" {
		t.Errorf("tool messages = %v", toolMsgs)
	}
	started := 0
	for _, e := range stored.Events {
		if e.Event == run.EventToolCallStarted {
			started++
		}
	}
	if started != 4 {
		t.Errorf("%d ToolCallStarted events stored, want 4", started)
	}
}

func TestAgent_VariablesSurviveTheRunBoundary(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{Match: "first", ToolCalls: []scripted.ToolCall{{Name: "execute", Args: map[string]any{"code": "let memo = await get_weather({city: 'Oslo'})"}}}},
		{Match: "first", Content: "stored"},
		{Match: "second", ToolCalls: []scripted.ToolCall{{Name: "execute", Args: map[string]any{"code": "memo.temp_c"}}}},
		{Match: "second", Content: "done"},
	}})
	a, err := agent.New(agent.Config{Model: m, Tools: cm.Tools()})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"first", "second"} {
		out, err := a.Run(context.Background(), run.TextInput(in), agent.WithSessionID("s"))
		if err != nil {
			t.Fatal(err)
		}
		if in == "second" {
			last := out.Tools[len(out.Tools)-1]
			if last.ToolName != "execute" || !strings.Contains(last.Result, `"result":9`) {
				t.Fatalf("second run's cell: %+v", last)
			}
		}
	}
}

func TestAgent_ExecuteOutsideARunNeedsASession(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	_, err := cm.Tools()[0].Call(context.Background(), json.RawMessage(`{"code":"1"}`))
	if err == nil || !strings.Contains(err.Error(), "needs the run's session") {
		t.Fatalf("err = %v", err)
	}
	if names := []string{cm.Tools()[0].Definition().Name, cm.Tools()[1].Definition().Name}; strings.Join(names, ",") != "execute,restart" {
		t.Fatalf("tools = %v", names)
	}
	if n := len(newCM(t, codemode.Config{NoRestart: true}).Tools()); n != 1 {
		t.Fatalf("NoRestart: %d tools", n)
	}
	set, err := tool.NewSet(nil, cm.Toolkit())
	if err != nil || strings.Join(set.Names(), ",") != "execute,restart" || cm.Toolkit().Name != "code_mode" {
		t.Fatalf("toolkit: %v %v", set, err)
	}
}

func TestExecuteDescription_TellsTheModelHowToCallTools(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{Persist: true, DB: db.New("", memory.New()), Results: &memResults{}})
	d := cm.Tools()[0].Definition().Description
	for _, want := range []string{
		"await get_weather({city: \"Paris\"})", "Promise.all", "try/catch", "Top-level let/const/var/function/class declarations persist",
		"- get_weather({city: string}): Current weather in a city.",
		"- compare({a: number, b: number}): Difference a - b.",
		"- delete_all({}): Deletes everything. [not callable from code: it needs a human]",
		"results.get(id)", "saved after each successful cell",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q:\n%s", want, d)
		}
	}
}
