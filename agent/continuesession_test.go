package agent_test

import (
	"context"
	"encoding/json"
	"iter"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// promptRecorder keeps the messages of every request it is given.
type promptRecorder struct {
	model.Model
	reqs [][]model.Message
}

func (r *promptRecorder) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	r.reqs = append(r.reqs, req.Collect())
	return r.Model.Stream(ctx, req)
}

// confirmAgent is an agent with a database whose runs asked to "deploy"
// pause on a tool needing confirmation (then answer "done"); it answers
// other runs "hello".
func confirmAgent(t *testing.T, cfg agent.Config) (*agent.Agent, *promptRecorder) {
	t.Helper()
	rec := &promptRecorder{Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{Match: "deploy", ToolCalls: []scripted.ToolCall{{Name: "deploy"}}}, {Match: "deploy", Content: "done"},
		{Content: "hello"},
	}})}
	cfg.Model = rec
	cfg.Tools = []tool.Tool{tool.MustFunc(tool.FuncConfig{Name: "deploy", Description: "Deploys.", RequiresConfirmation: true},
		func(context.Context, struct{}) (string, error) { return "deployed", nil })}
	if cfg.DB == nil {
		cfg.DB = testdbs.SQLite(t)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, rec
}

// A continued run reads the session its paused run is in: the session
// state stays (the continued run has it, the session row keeps it) and the
// history is in the model's context, whether or not the continue names
// the session.
func TestContinueRun_KeepsTheSessionsStateAndHistory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		stream bool
		opts   []agent.RunOption
	}{
		{"run", false, nil},
		{"stream", true, nil},
		{"run naming the session", false, []agent.RunOption{agent.WithSessionID("s")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := testdbs.SQLite(t)
			a, rec := confirmAgent(t, agent.Config{DB: d, AddHistoryToContext: true})
			ctx := context.Background()
			if _, err := a.Run(ctx, run.TextInput("first question"), agent.WithSessionID("s"), agent.WithSessionState(map[string]any{"cart": "apples"})); err != nil {
				t.Fatal(err)
			}
			paused, err := a.Run(ctx, run.TextInput("deploy it"), agent.WithSessionID("s"))
			if err != nil || paused.Status != run.StatusPaused {
				t.Fatalf("%v %v", err, paused)
			}
			paused.Requirements[0].ToolExecution.Confirmed = new(true)
			var out *run.Output
			if tc.stream {
				for ev, err := range a.ContinueStream(ctx, paused, tc.opts...) {
					if err != nil {
						t.Fatal(err)
					}
					if ev.Event == run.EventRunCompleted {
						out = &run.Output{SessionState: ev.SessionState}
					}
				}
			} else if out, err = a.ContinueRun(ctx, paused, tc.opts...); err != nil {
				t.Fatal(err)
			}
			if out == nil {
				t.Fatal("the continued run did not complete")
			}
			if out.SessionState["cart"] != "apples" {
				t.Errorf("continued run's session state %v, want the session's", out.SessionState)
			}
			s, err := d.GetSession(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			var data struct {
				State map[string]any `json:"session_state"`
			}
			if err := json.Unmarshal(s.SessionData, &data); err != nil || data.State["cart"] != "apples" {
				t.Errorf("stored session data %s (%v): the state is lost", s.SessionData, err)
			}
			last := rec.reqs[len(rec.reqs)-1]
			sawFirst := false
			for _, m := range last {
				sawFirst = sawFirst || (m.Role == model.RoleUser && m.Content == "first question")
			}
			if !sawFirst {
				t.Errorf("the continued run's model request lacks the session's history (%d messages)", len(last))
			}
		})
	}
}
