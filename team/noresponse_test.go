package team

import (
	"context"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// mute is a model that answers with nothing.
type mute struct{ model.Model }

func (mute) Stream(context.Context, *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) { yield(&model.Chunk{StopReason: "stop"}, nil) }
}

// A member run that completes with no content and no tool call is "No
// response from the member agent." to the leader, as in Agno (a broadcast
// names the member): the leader read an empty string.
func TestDelegate_AMemberWithoutAnAnswerIsNoResponse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode   Mode
		leader *scripted.Model
		want   string
	}{
		{ModeCoordinate, script(call(ToolDelegate, map[string]any{"member_id": "quiet", "task": "say something"}), answer("ok")), "No response from the member agent."},
		{ModeBroadcast, script(call(ToolDelegateAll, map[string]any{"task": "say something"}), answer("ok")), "Agent quiet: No response from the member agent."},
	} {
		rec := &recorder{Model: c.leader}
		quiet := mustAgent(t, agent.Config{ID: "quiet", Model: mute{Model: scripted.Reply("unused")}})
		tm := mustTeam(t, Config{ID: "t", Mode: c.mode, Model: rec, Members: []*agent.Agent{quiet}})
		out, err := tm.Run(context.Background(), run.TextInput("go"))
		if err != nil || out.Status != run.StatusCompleted {
			t.Fatalf("%s: %v, %v", c.mode, out, err)
		}
		reqs := rec.requests()
		last := reqs[len(reqs)-1]
		if !slices.ContainsFunc(last, func(m model.Message) bool { return m.Role == model.RoleTool && strings.TrimSpace(m.Content) == c.want }) {
			t.Errorf("%s: the leader's tool result is not %q: %+v", c.mode, c.want, last)
		}
	}
}
