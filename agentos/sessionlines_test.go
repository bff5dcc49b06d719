package agentos

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// A PATCH of a session's state while a run of the session is in progress
// here: the run read the session before the PATCH and wrote its own read,
// plus its changes, after it, so the edit was lost. The PATCH is now a
// turn of the session's line and the run writes its changes over the
// patched row: a key the PATCH removed stays removed, one it set stays,
// the run's own key is added.
func TestSessions_PatchDuringARunIsKept(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	var waiter *agent.Agent
	f := newFixtureWith(t, Config{}, func(f *fixture, _ *agent.Agent, cfg *Config) {
		hold := tool.MustFunc(tool.FuncConfig{Name: "hold", Description: "Waits for the test."}, func(ctx context.Context, _ struct{}) (string, error) {
			close(entered)
			select {
			case <-release:
				return "released", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		})
		var err error
		waiter, err = agent.New(agent.Config{ID: "waiter", DB: f.db, Tools: []tool.Tool{hold}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "hold"}}}, {Content: "done"}}})})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Agents = append(cfg.Agents, waiter)
	})
	ctx := context.Background()
	first, err := agent.New(agent.Config{ID: "waiter", DB: f.db, Model: scripted.Reply("ready")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Run(ctx, run.TextInput("start"), agent.WithSessionID("s-w"), agent.WithSessionState(map[string]any{"old": 1})); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		out, err := waiter.Run(ctx, run.TextInput("go"), agent.WithSessionID("s-w"), agent.WithSessionState(map[string]any{"mine": 1}))
		if err == nil && out.Status != run.StatusCompleted {
			err = errorf(500, "run %s", out.Status)
		}
		done <- err
	}()
	<-entered
	res := do(t, "PATCH", f.url+"/sessions/s-w", strings.NewReader(`{"session_state":{"patched":true}}`), map[string]string{"Content-Type": "application/json"})
	close(release)
	if res.status != 200 {
		t.Fatalf("PATCH = %d %s", res.status, res.body)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s, err := f.db.GetSession(ctx, "s-w")
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		State map[string]any `json:"session_state"`
	}
	if err := json.Unmarshal(s.SessionData, &data); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"patched": true, "mine": 1.0}; !reflect.DeepEqual(data.State, want) {
		t.Fatalf("session_state %v, want %v", data.State, want)
	}
}
