package team

import (
	"context"
	"iter"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// panicModel is a model with a bug: it panics when asked.
type panicModel struct{ model.Model }

func (panicModel) Stream(context.Context, *model.Request) iter.Seq2[*model.Chunk, error] {
	panic("index out of range")
}

func (panicModel) Invoke(context.Context, *model.Request) (*model.Response, error) {
	panic("index out of range")
}

// A member that panics in a broadcast or in execute_tasks_parallel (each
// member on a goroutine of its own) is a failed member the leader reads,
// as when it panics in a single delegation: the process goes on, the
// other members' answers reach the leader and the team run completes.
func TestMemberPanic_InAFanOutIsAFailedMember(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode   Mode
		leader *scripted.Model
		want   []string
	}{
		{ModeBroadcast, script(call(ToolDelegateAll, map[string]any{"task": "vote"}), answer("all voted")),
			[]string{"Agent a: fine", "Agent b: Error - member b could not run: it panicked: index out of range"}},
		{ModeTasks, parallelLeader(),
			[]string{"Task [t1] completed. Result: fine", "Task [t2] failed: member b could not run: it panicked: index out of range"}},
	} {
		t.Run(string(c.mode), func(t *testing.T) {
			t.Parallel()
			d := openDB(t)
			a := mustAgent(t, agent.Config{ID: "a", Model: scripted.Reply("fine"), DB: d})
			b := mustAgent(t, agent.Config{ID: "b", Model: panicModel{scripted.Reply("x")}, DB: d})
			leader := &recorder{Model: c.leader}
			tm := mustTeam(t, Config{ID: "council", Mode: c.mode, Model: leader, Members: []*agent.Agent{a, b}, DB: d})
			evs := collect(t, tm.Stream(context.Background(), run.TextInput("plan it"), agent.WithSessionID("s")))
			if last := evs[len(evs)-1]; last.Event != "TeamRunCompleted" {
				t.Fatalf("last event = %s %v", last.Event, last.Content)
			}
			var results []string
			for _, req := range leader.requests() {
				for _, m := range req {
					if m.Role == model.RoleTool {
						results = append(results, m.Content)
					}
				}
			}
			all := strings.Join(results, "\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("the leader read %q, want %q in it", all, w)
				}
			}
			row, err := d.GetRun(context.Background(), evs[0].RunID)
			if err != nil || row.Status != run.StatusCompleted {
				t.Fatalf("stored team run = %+v, %v", row, err)
			}
		})
	}
}
