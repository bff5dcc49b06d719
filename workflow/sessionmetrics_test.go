package workflow

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// sessionMetrics is the stored session's session_metrics, and the whole
// session_data.
func sessionMetrics(t *testing.T, d *db.DB, sessionID string) (json.RawMessage, json.RawMessage) {
	t.Helper()
	s, err := d.GetSession(context.Background(), sessionID)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(s.SessionData, &data); err != nil {
		t.Fatalf("session_data %s: %v", s.SessionData, err)
	}
	return data[run.SessionMetricsKey], s.SessionData
}

// A workflow run adds its steps' tokens to its session's metrics, as Agno's
// workflow does; other members of session_data are kept as stored
// (integers past 2^53 were rounded by a decode into Go values). They were
// never written.
func TestRun_SessionMetricsAddUpTheSteps(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.db.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeWorkflow, WorkflowID: "draft-review",
		SessionData: json.RawMessage(`{"keep":{"n":12345678901234567890},"session_metrics":{"input_tokens":100,"total_tokens":100,"audio_input_tokens":3}}`)}); err != nil {
		t.Fatal(err)
	}
	want := run.SessionMetrics{}
	want.InputTokens, want.TotalTokens = 100, 100
	for range 2 {
		out, err := f.wf.Run(ctx, run.TextInput("write about Go"), agent.WithSessionID("s1"))
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Metrics.Steps) != 2 {
			t.Fatalf("steps metrics %+v", out.Metrics.Steps)
		}
		want.AddRun(out.Metrics)
	}
	got, data := sessionMetrics(t, f.db, "s1")
	wb, _ := json.Marshal(want)
	if d := jsontest.MissingFrom(wb, got); d != "" || want.TotalTokens <= 100 {
		t.Fatalf("session metrics %s: %s (want %s)", got, d, wb)
	}
	if d := jsontest.MissingFrom([]byte(`{"keep":{"n":12345678901234567890},"session_metrics":{"audio_input_tokens":3}}`), data); d != "" {
		t.Fatalf("session_data lost what it held: %s", d)
	}
}

// A paused workflow run's steps are counted when it is stored paused; its
// continue adds only the steps it ran since, so the session counts the run
// once.
func TestContinueRun_SessionMetricsCountTheRunOnce(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	ctx := context.Background()
	review := Step{Name: "review", Runner: newAgent(t, "reviewer", scripted.Reply("approved"), d)}
	review.HumanReview = &HumanReview{RequiresConfirmation: true}
	wf := mustNew(t, Config{ID: "wf", DB: d, Steps: []Step{
		{Name: "draft", Runner: newAgent(t, "drafter", scripted.Reply("a first draft"), d)}, review}})
	paused, err := wf.Run(ctx, run.TextInput("go"), agent.WithSessionID("s1"))
	if err != nil || paused.Status != run.StatusPaused {
		t.Fatalf("%v %v", err, paused.Status)
	}
	var atPause run.SessionMetrics
	atPause.AddRun(paused.Metrics)
	got, _ := sessionMetrics(t, d, "s1")
	wb, _ := json.Marshal(atPause)
	if diff := jsontest.Diff(wb, got); diff != "" || atPause.TotalTokens == 0 {
		t.Fatalf("paused: session metrics %s: %s", got, diff)
	}
	final, err := wf.ContinueRun(ctx, paused.RunID, []run.StepRequirement{answer(paused.StepRequirements[0], yes())})
	if err != nil || final.Status != run.StatusCompleted {
		t.Fatalf("%v %v", err, final.Status)
	}
	var once run.SessionMetrics
	once.AddRun(final.Metrics)
	got, _ = sessionMetrics(t, d, "s1")
	wb, _ = json.Marshal(once)
	if diff := jsontest.Diff(wb, got); diff != "" || once.TotalTokens <= atPause.TotalTokens {
		t.Fatalf("continued: session metrics %s: %s (want %s)", got, diff, wb)
	}
}

// metrics.steps lists the steps whose executor has metrics (agents, teams),
// as Agno's does; a function step is not listed.
func TestRun_MetricsStepsListOnlyExecutorsWithMetrics(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	wf := mustNew(t, Config{ID: "mixed", DB: d, Steps: []Step{fn("prepare"),
		{Name: "draft", Runner: newAgent(t, "drafter", scripted.Reply("a first draft"), d)}}})
	out, err := wf.Run(context.Background(), run.TextInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Metrics.Steps["prepare"]; ok || len(out.Metrics.Steps) != 1 || out.Metrics.Steps["draft"].Metrics == nil {
		t.Fatalf("metrics.steps = %+v, want the agent step only", out.Metrics.Steps)
	}
}
