package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// storedSessionMetrics is the session_metrics member of the stored session.
func storedSessionMetrics(t *testing.T, d *db.DB, sessionID string) json.RawMessage {
	t.Helper()
	s, err := d.GetSession(context.Background(), sessionID)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(s.SessionData, &data); err != nil {
		t.Fatalf("session_data %s: %v", s.SessionData, err)
	}
	return data[run.SessionMetricsKey]
}

// sumOfRuns is the session metrics the stored runs add up to.
func sumOfRuns(t *testing.T, d *db.DB, runIDs ...string) []byte {
	t.Helper()
	var sum run.SessionMetrics
	for _, id := range runIDs {
		sum.AddRun(storedRun(t, d, id).Metrics)
	}
	b, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every run adds its tokens to session_data.session_metrics, per model, as
// Agno does; what Agno stored there that Agentry does not model (audio
// tokens, additional_metrics) is kept.
func TestRun_SessionMetricsAddUpTheRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openSQLite(t)
	a := mustAgent(t, Config{ID: "a1", Model: scripted.Reply("The weather is sunny today."), DB: d})
	var ids []string
	for i := range 3 {
		out, err := a.Run(ctx, run.TextInput("how is the weather? "+string(rune('a'+i))), WithSessionID("s1"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, out.RunID)
		if d := jsontest.Diff(sumOfRuns(t, d, ids...), storedSessionMetrics(t, d, "s1")); d != "" {
			t.Fatalf("after run %d: %s", i+1, d)
		}
	}
	var got run.SessionMetrics
	if err := json.Unmarshal(storedSessionMetrics(t, d, "s1"), &got); err != nil || got.TotalTokens == 0 || len(got.Details["model"]) != 1 {
		t.Fatalf("session metrics %+v (%v): want tokens and the model listed", got, err)
	}

	// A session Agno wrote, with members Agentry does not model.
	agno := `{"session_metrics":{"input_tokens":100,"total_tokens":100,"audio_input_tokens":7,"additional_metrics":{"k":1}},"other":{"n":12345678901234567890}}`
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s2", SessionType: run.TypeAgent, AgentID: "a1", SessionData: json.RawMessage(agno)}); err != nil {
		t.Fatal(err)
	}
	out, err := a.Run(ctx, run.TextInput("and tomorrow?"), WithSessionID("s2"))
	if err != nil {
		t.Fatal(err)
	}
	m := out.Metrics
	want := `{"input_tokens":` + itoa(100+m.InputTokens) + `,"output_tokens":` + itoa(m.OutputTokens) +
		`,"total_tokens":` + itoa(100+m.TotalTokens) + `,"audio_input_tokens":7,"additional_metrics":{"k":1}}`
	if d := jsontest.MissingFrom([]byte(want), storedSessionMetrics(t, d, "s2")); d != "" {
		t.Fatal(d)
	}
	s, _ := d.GetSession(ctx, "s2")
	if d := jsontest.MissingFrom([]byte(`{"other":{"n":12345678901234567890}}`), s.SessionData); d != "" {
		t.Fatalf("session_data lost a member: %s", d)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// A paused run's tokens are counted when it is stored paused; its continue
// adds only what it spent since, so the session counts the run once.
func TestContinueRun_SessionMetricsCountTheRunOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openSQLite(t)
	del := funcTool("delete_file", tool.FuncConfig{RequiresConfirmation: true}, func(context.Context) (string, error) { return "deleted", nil })
	a := mustAgent(t, Config{ID: "a1", DB: d, Tools: []tool.Tool{del}, Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "delete_file"}}},
		scripted.Turn{Content: "all done"})})
	paused, err := a.Run(ctx, run.TextInput("delete it"), WithSessionID("s1"))
	if err != nil || paused.Status != run.StatusPaused {
		t.Fatalf("%v %s", err, paused.Status)
	}
	if d := jsontest.Diff(sumOfRuns(t, d, paused.RunID), storedSessionMetrics(t, d, "s1")); d != "" {
		t.Fatalf("paused: %s", d)
	}
	paused.Requirements[0].ToolExecution.Confirmed = boolp(true)
	final, err := a.ContinueRun(ctx, paused)
	if err != nil || final.Status != run.StatusCompleted {
		t.Fatalf("%v %s", err, final.Status)
	}
	if final.Metrics.TotalTokens <= paused.Metrics.TotalTokens {
		t.Fatalf("the continue spent no token: %d then %d", paused.Metrics.TotalTokens, final.Metrics.TotalTokens)
	}
	if d := jsontest.Diff(sumOfRuns(t, d, final.RunID), storedSessionMetrics(t, d, "s1")); d != "" {
		t.Fatalf("continued: %s", d)
	}
}

// Stored session_metrics Agentry cannot add to (not an object) are left as
// they are; the run and the rest of the session are stored.
func TestRun_SessionMetricsNotAnObjectAreLeftAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openSQLite(t)
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeAgent, AgentID: "a1",
		SessionData: json.RawMessage(`{"session_metrics":"lots","session_state":{"k":1}}`)}); err != nil {
		t.Fatal(err)
	}
	a := mustAgent(t, Config{ID: "a1", Model: scripted.Reply("ok"), DB: d})
	out, err := a.Run(ctx, run.TextInput("hi"), WithSessionID("s1"), WithSessionState(map[string]any{"k": 2}))
	if err != nil {
		t.Fatal(err)
	}
	storedRun(t, d, out.RunID)
	s, err := d.GetSession(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if d := jsontest.Diff([]byte(`{"session_metrics":"lots","session_state":{"k":2}}`), s.SessionData); d != "" {
		t.Fatal(d)
	}
}
