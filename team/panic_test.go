package team

import (
	"context"
	"iter"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
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

// panicAfterTool is a model with a bug that shows once a tool has answered.
type panicAfterTool struct{ model.Model }

func (p panicAfterTool) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	for _, m := range req.Collect() {
		if m.Role == model.RoleTool {
			panic("index out of range")
		}
	}
	return p.Model.Stream(ctx, req)
}

// A member whose continue panics (after its confirmed tool ran) is a
// failed member the leader reads, and its run is stored ERROR: left
// PAUSED, it could be continued again, its tool running a second time.
func TestMemberPanic_InAContinueEndsTheMemberRunError(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var ran int32
	ops := mustAgent(t, agent.Config{ID: "ops", Name: "Ops", DB: d, Tools: []tool.Tool{confirmTool(&ran)},
		Model: panicAfterTool{script(call("deploy", map[string]any{}), answer("deployed it"))}})
	tm := mustTeam(t, Config{ID: "crew", Model: script(call(ToolDelegate, map[string]any{"member_id": "ops", "task": "deploy"}), answer("ops failed")), Members: []*agent.Agent{ops}, DB: d})
	ctx := context.Background()
	paused, err := tm.Run(ctx, run.TextInput("go"), agent.WithSessionID("s"))
	if err != nil || paused.Status != run.StatusPaused {
		t.Fatalf("first leg %v, %v", paused.Status, err)
	}
	memberRun := paused.Requirements[0].MemberRunID
	out, err := tm.ContinueRun(ctx, paused, agent.WithRequirements(confirmAll(paused.Requirements)))
	if err != nil || out.Status != run.StatusCompleted || ran != 1 {
		t.Fatalf("continue %v, %v, ran %d", out.Status, err, ran)
	}
	rows := rowsOf(t, d, "s")
	if rows[memberRun].Status != run.StatusError {
		t.Fatalf("the member run whose continue panicked is stored %s, want ERROR", rows[memberRun].Status)
	}
	if o, _ := rows[memberRun].Output(); len(o.Requirements) != 0 {
		t.Errorf("the member run still waits on %d requirements", len(o.Requirements))
	}
	for _, raw := range out.MemberResponses {
		if !strings.Contains(string(raw), `"status":"ERROR"`) {
			t.Errorf("member response %s", raw)
		}
	}
	if _, err := ops.ContinueRun(ctx, mustOutput(t, rows[memberRun]), agent.WithRequirements(confirmAll(paused.Requirements))); err == nil || ran != 1 {
		t.Errorf("the member run was continued again: %v, deploy ran %d times", err, ran)
	}
}

func mustOutput(t *testing.T, r *db.Run) *run.Output {
	t.Helper()
	o, err := r.Output()
	if err != nil {
		t.Fatal(err)
	}
	return o
}
