package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

func memoryTexts(t *testing.T, d *db.DB, user string) []string {
	t.Helper()
	ms, _, err := d.ListMemories(context.Background(), db.MemoryFilter{UserID: user, Limit: 100, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Memory)
	}
	slices.Sort(out)
	return out
}

// addMemory is a memory model that adds one memory, whatever it is asked.
func addMemory(text string) *scripted.Model {
	return scripted.Reply(`{"updates":[{"op":"add","memory_id":"","memory":"` + text + `","topics":["t"]}]}`)
}

func systemOf(msgs []model.Message) string {
	if len(msgs) > 0 && msgs[0].Role == model.RoleSystem {
		return msgs[0].Content
	}
	return ""
}

func TestMemory_UpdateOnRunStoresMemoriesOfThisUserOnly(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		main := &recorder{Model: scripted.Reply("noted")}
		a := mustAgent(t, Config{ID: "a1", Model: main, DB: d,
			MemoryConfig: MemoryConfig{UpdateMemoryOnRun: true, MemoryModel: addMemory("likes tea")}})
		evs := collect(t, a.Stream(ctx, run.Input{InputContent: "I like tea"}, WithUserID("u1")))
		if i, j := slices.Index(names(evs), run.EventMemoryUpdateStarted), slices.Index(names(evs), run.EventMemoryUpdateCompleted); i < 0 || j < i ||
			j > slices.Index(names(evs), run.EventRunCompleted) {
			t.Fatalf("events = %v", names(evs))
		}
		var mems []map[string]any
		if err := json.Unmarshal(find(evs, run.EventMemoryUpdateCompleted).Memories, &mems); err != nil || len(mems) != 1 || mems[0]["memory"] != "likes tea" || mems[0]["user_id"] != "u1" {
			t.Fatalf("MemoryUpdateCompleted memories = %s (%v)", find(evs, run.EventMemoryUpdateCompleted).Memories, err)
		}
		if got := memoryTexts(t, d, "u1"); !slices.Equal(got, []string{"likes tea"}) {
			t.Fatalf("u1 = %v", got)
		}
		// u2's run neither sees nor changes u1's memories.
		b := mustAgent(t, Config{ID: "a1", Model: main, DB: d,
			MemoryConfig: MemoryConfig{UpdateMemoryOnRun: true, MemoryModel: addMemory("likes coffee")}})
		if _, err := b.Run(ctx, run.Input{InputContent: "I like coffee"}, WithUserID("u2")); err != nil {
			t.Fatal(err)
		}
		if got := memoryTexts(t, d, "u2"); !slices.Equal(got, []string{"likes coffee"}) {
			t.Fatalf("u2 = %v", got)
		}
		if got := memoryTexts(t, d, "u1"); !slices.Equal(got, []string{"likes tea"}) {
			t.Fatalf("u1 after u2's run = %v", got)
		}
		reqs := main.requests()
		sys := systemOf(reqs[len(reqs)-1])
		if strings.Contains(sys, "likes tea") || !strings.Contains(sys, "capability to retain memories") {
			t.Fatalf("u2's system message = %q", sys)
		}
		// u1's next run has u1's memories in its system message.
		if _, err := a.Run(ctx, run.Input{InputContent: "hello"}, WithUserID("u1")); err != nil {
			t.Fatal(err)
		}
		reqs = main.requests()
		sys = systemOf(reqs[len(reqs)-1])
		if !strings.Contains(sys, "<memories_from_previous_interactions>\n- likes tea") || strings.Contains(sys, "coffee") {
			t.Fatalf("u1's system message = %q", sys)
		}
	})
}

func TestMemory_RunWithoutUserStoresNone(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	a := mustAgent(t, Config{ID: "a1", Model: scripted.Reply("ok"), DB: d,
		MemoryConfig: MemoryConfig{UpdateMemoryOnRun: true, EnableAgenticMemory: true, MemoryModel: addMemory("x")}})
	evs := collect(t, a.Stream(context.Background(), run.Input{InputContent: "I like tea"}))
	if count(evs, run.EventMemoryUpdateStarted) != 0 {
		t.Fatalf("events = %v", names(evs))
	}
	if _, n, _ := d.ListMemories(context.Background(), db.MemoryFilter{Limit: 10, Page: 1}); n != 0 {
		t.Fatalf("%d memories stored for a run without a user", n)
	}
}

func TestMemory_MalformedManagerAnswerChangesNothing(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		if _, err := d.UpsertMemory(ctx, &db.Memory{MemoryID: "m1", Memory: "likes tea", UserID: "u1"}); err != nil {
			t.Fatal(err)
		}
		bad := scripted.Reply(`{"updates":[{"op":"add","memory_id":"","memory":"new","topics":[]},{"op":"delete","memory_id":"not-yours","memory":"","topics":[]}]}`)
		a := mustAgent(t, Config{ID: "a1", Model: scripted.Reply("ok"), DB: d, MemoryConfig: MemoryConfig{UpdateMemoryOnRun: true, MemoryModel: bad}})
		out, err := a.Run(ctx, run.Input{InputContent: "forget everything"}, WithUserID("u1"))
		if err != nil || out.Status != run.StatusCompleted {
			t.Fatalf("run: %v %v", out.Status, err)
		}
		if got := memoryTexts(t, d, "u1"); !slices.Equal(got, []string{"likes tea"}) {
			t.Fatalf("memories = %v", got)
		}
	})
}

func TestMemory_AgenticToolUpdatesTheCallersMemories(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		main := script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "update_user_memory", Args: map[string]any{"task": "remember the user plays chess"}}}},
			scripted.Turn{Content: "I'll remember that."})
		a := mustAgent(t, Config{ID: "a1", Model: main, DB: d, MemoryConfig: MemoryConfig{EnableAgenticMemory: true, MemoryModel: addMemory("plays chess")}})
		out, err := a.Run(ctx, run.Input{InputContent: "I play chess"}, WithUserID("u1"))
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Tools) != 1 || out.Tools[0].ToolCallError || !strings.Contains(out.Tools[0].Result, "1 added") {
			t.Fatalf("tool = %+v", out.Tools)
		}
		if got := memoryTexts(t, d, "u1"); !slices.Equal(got, []string{"plays chess"}) {
			t.Fatalf("u1 = %v", got)
		}
		if !strings.Contains(systemOf(out.Messages), "update_user_memory") {
			t.Fatal("the system message does not explain the memory tool")
		}
		// Without a user id the tool refuses and stores nothing.
		out, err = a.Run(ctx, run.Input{InputContent: "I play chess"})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Tools) != 1 || !out.Tools[0].ToolCallError {
			t.Fatalf("tool without a user = %+v", out.Tools)
		}
		if _, n, _ := d.ListMemories(ctx, db.MemoryFilter{Limit: 10, Page: 1}); n != 1 {
			t.Fatalf("%d memories", n)
		}
	})
}

func TestMemory_SessionSummaryStoredAndAddedToContext(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		main := &recorder{Model: scripted.Reply("Paris it is")}
		a := mustAgent(t, Config{ID: "a1", Model: main, DB: d, MemoryConfig: MemoryConfig{EnableSessionSummaries: true,
			SessionSummaryModel: scripted.Reply(`{"summary":"The user plans a trip to Paris.","topics":["travel"]}`)}})
		evs := collect(t, a.Stream(ctx, run.Input{InputContent: "Plan a trip to Paris"}, WithSessionID("s1"), WithUserID("u1")))
		e := find(evs, run.EventSessionSummaryCompleted)
		if e == nil || count(evs, run.EventSessionSummaryStarted) != 1 || !strings.Contains(string(e.SessionSummary), "trip to Paris") {
			t.Fatalf("events = %v", names(evs))
		}
		s, err := d.GetSession(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		var sum map[string]any
		if err := json.Unmarshal(s.Summary, &sum); err != nil || sum["summary"] != "The user plans a trip to Paris." || sum["updated_at"] == nil {
			t.Fatalf("stored summary = %s", s.Summary)
		}
		if _, err := a.Run(ctx, run.Input{InputContent: "and the hotel?"}, WithSessionID("s1"), WithUserID("u1")); err != nil {
			t.Fatal(err)
		}
		reqs := main.requests()
		if sys := systemOf(reqs[len(reqs)-1]); !strings.Contains(sys, "<summary_of_previous_interactions>\nThe user plans a trip to Paris.") {
			t.Fatalf("system message = %q", sys)
		}
	})
}

func TestMemory_MalformedSummaryKeepsThePreviousOne(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	ctx := context.Background()
	good := mustAgent(t, Config{ID: "a1", Model: scripted.Reply("ok"), DB: d, MemoryConfig: MemoryConfig{EnableSessionSummaries: true,
		SessionSummaryModel: scripted.Reply(`{"summary":"first","topics":[]}`)}})
	if _, err := good.Run(ctx, run.Input{InputContent: "hi"}, WithSessionID("s1")); err != nil {
		t.Fatal(err)
	}
	bad := mustAgent(t, Config{ID: "a1", Model: scripted.Reply("ok"), DB: d, MemoryConfig: MemoryConfig{EnableSessionSummaries: true,
		SessionSummaryModel: scripted.Reply(`not json`)}})
	if _, err := bad.Run(ctx, run.Input{InputContent: "hi again"}, WithSessionID("s1")); err != nil {
		t.Fatal(err)
	}
	s, _ := d.GetSession(ctx, "s1")
	if !strings.Contains(string(s.Summary), `"first"`) {
		t.Fatalf("summary = %s", s.Summary)
	}
}

func TestMemory_PastSessionToolsSeeOnlyTheUsersSessionsWithThisAgent(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		plain := func(id, reply string) *Agent {
			return mustAgent(t, Config{ID: id, Model: scripted.Reply(reply), DB: d})
		}
		for _, r := range []struct{ agent, session, user, text string }{
			{"a1", "u1-old", "u1", "my dog is called Rex"},
			{"a1", "u2-old", "u2", "my secret is swordfish"},
			{"other", "u1-other-agent", "u1", "other agent talk"},
		} {
			if _, err := plain(r.agent, "reply to "+r.text).Run(ctx, run.Input{InputContent: r.text}, WithSessionID(r.session), WithUserID(r.user)); err != nil {
				t.Fatal(err)
			}
		}
		main := script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{
			{Name: "search_past_sessions", Args: map[string]any{}},
			{Name: "read_past_session", Args: map[string]any{"session_id": "u1-old"}},
			{Name: "read_past_session", Args: map[string]any{"session_id": "u2-old"}},
			{Name: "read_past_session", Args: map[string]any{"session_id": "u1-other-agent"}},
		}}, scripted.Turn{Content: "done"})
		a := mustAgent(t, Config{ID: "a1", Model: main, DB: d, MemoryConfig: MemoryConfig{SearchPastSessions: true}})
		out, err := a.Run(ctx, run.Input{InputContent: "what is my dog called?"}, WithSessionID("u1-now"), WithUserID("u1"))
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Tools) != 4 {
			t.Fatalf("tools = %+v", out.Tools)
		}
		search := out.Tools[0].Result
		if !strings.Contains(search, `"session_id":"u1-old"`) || !strings.Contains(search, "Rex") ||
			strings.Contains(search, "u2-old") || strings.Contains(search, "swordfish") || strings.Contains(search, "u1-other-agent") || strings.Contains(search, "u1-now") {
			t.Fatalf("search_past_sessions = %s", search)
		}
		if r := out.Tools[1].Result; !strings.Contains(r, "User: my dog is called Rex") || !strings.Contains(r, "Assistant: reply to my dog") {
			t.Fatalf("read own = %s", r)
		}
		for _, i := range []int{2, 3} {
			if r := out.Tools[i].Result; r != "Session not found." {
				t.Fatalf("read %d = %s", i, r)
			}
		}
	})
}

func TestMemory_ConfigNeedsDBAndFreeToolNames(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Model: scripted.Reply("x"), MemoryConfig: MemoryConfig{UpdateMemoryOnRun: true}}); err == nil {
		t.Fatal("memory without a DB accepted")
	}
	d := testdbs.SQLite(t)
	clash := funcTool("update_user_memory", tool.FuncConfig{}, func(context.Context) (string, error) { return "", nil })
	if _, err := New(Config{Model: scripted.Reply("x"), DB: d, Tools: []tool.Tool{clash}, MemoryConfig: MemoryConfig{EnableAgenticMemory: true}}); err == nil {
		t.Fatal("a tool named like the memory tool accepted")
	}
}
