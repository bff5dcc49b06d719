package agentos

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// TestApprovals_AgentPauseIsQueuedAndResolvingItContinuesTheRun: a paused
// agent run is a pending approval; resolving it through /approvals
// confirms (or rejects) the tool and the run goes on.
func TestApprovals_AgentPauseIsQueuedAndResolvingItContinuesTheRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status   string
		executed int32
	}{{db.ApprovalApproved, 1}, {db.ApprovalRejected, 0}} {
		t.Run(tc.status, func(t *testing.T) {
			t.Parallel()
			f := newRunsFixture(t, Config{})
			paused := decode[run.Output](t, postForm(t, f.url+"/agents/hitl/runs", map[string]string{"message": "delete", "stream": "false", "user_id": "alice"}, nil))
			if paused.Status != run.StatusPaused {
				t.Fatalf("run %s", paused.Status)
			}
			list := decode[map[string]any](t, get(t, f.url+"/approvals?status=pending&run_id="+paused.RunID, nil))
			data := list["data"].([]any)
			if len(data) != 1 {
				t.Fatalf("approvals %v", list)
			}
			ap := data[0].(map[string]any)
			if ap["source_type"] != "agent" || ap["agent_id"] != "hitl" || ap["pause_type"] != "confirmation" || ap["tool_name"] != "delete_file" ||
				ap["user_id"] != "alice" || ap["run_status"] != "PAUSED" || ap["requirements"] == nil {
				t.Fatalf("approval %v", ap)
			}
			if c := get(t, f.url+"/approvals/count?user_id=alice", nil); strings.TrimSpace(c.body) != `{"count":1}` {
				t.Errorf("count %s", c.body)
			}
			res := do(t, http.MethodPost, f.url+"/approvals/"+ap["id"].(string)+"/resolve", strings.NewReader(`{"status":"`+tc.status+`"}`),
				map[string]string{"Content-Type": "application/json"})
			if res.status != http.StatusOK {
				t.Fatalf("resolve %d %s", res.status, res.body)
			}
			after := decode[map[string]any](t, res)
			if after["status"] != tc.status || after["run_status"] != "COMPLETED" {
				t.Errorf("approval after resolve %v", after)
			}
			row, err := f.db.GetRun(context.Background(), paused.RunID)
			if err != nil || row.Status != run.StatusCompleted || f.executed.Load() != tc.executed {
				t.Fatalf("run %v %v, executed %d", row, err, f.executed.Load())
			}
			if c := get(t, f.url+"/approvals/count", nil); strings.TrimSpace(c.body) != `{"count":0}` {
				t.Errorf("count after %s", c.body)
			}
		})
	}
}

// TestApprovals_ContinuingAnAgentRunResolvesItsApproval: continuing through
// the continue route records the answer on the approval.
func TestApprovals_ContinuingAnAgentRunResolvesItsApproval(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	paused := decode[run.Output](t, postForm(t, f.url+"/agents/hitl/runs", map[string]string{"message": "delete", "stream": "false"}, nil))
	confirm := `[{"tool_call_id":"` + paused.Tools[0].ToolCallID + `","confirmed":true}]`
	res := postForm(t, f.url+"/agents/hitl/runs/"+paused.RunID+"/continue", map[string]string{"tools": confirm, "stream": "false"}, nil)
	if res.status != http.StatusOK {
		t.Fatalf("continue %d %s", res.status, res.body)
	}
	list := decode[map[string]any](t, get(t, f.url+"/approvals?run_id="+paused.RunID, nil))
	data := list["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("approvals %v", list)
	}
	if ap := data[0].(map[string]any); ap["status"] != "approved" || ap["run_status"] != "COMPLETED" {
		t.Errorf("approval after continue %v", ap)
	}
}

// An approval resolved while an execution of its run is still letting go
// of it in this process (a background run's worker unregisters the run
// just after its final save: the run is PAUSED, its approval pending,
// its registration not yet ended) continues the run once that execution
// ends. The resolve returned at once with the approval resolved and the
// run left PAUSED, which no approval could then continue.
func TestApprovals_ResolvedWhileTheRunIsLetGoOfContinuesIt(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	paused := decode[run.Output](t, postForm(t, f.url+"/agents/hitl/runs", map[string]string{"message": "delete", "stream": "false"}, nil))
	if paused.Status != run.StatusPaused {
		t.Fatalf("run %s", paused.Status)
	}
	list := decode[map[string]any](t, get(t, f.url+"/approvals?status=pending&run_id="+paused.RunID, nil))
	data := list["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("approvals %v", list)
	}
	id := data[0].(map[string]any)["id"].(string)
	// The run is still registered, as by a worker returning from it.
	_, fl, err := f.srv.runs.begin(context.Background(), paused.RunID, run.Component{Type: run.TypeAgent, ID: "hitl"}, "", false)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		f.srv.runs.end(paused.RunID, fl)
	}()
	res := do(t, http.MethodPost, f.url+"/approvals/"+id+"/resolve", strings.NewReader(`{"status":"approved"}`), map[string]string{"Content-Type": "application/json"})
	if res.status != http.StatusOK {
		t.Fatalf("resolve %d %s", res.status, res.body)
	}
	row, err := f.db.GetRun(context.Background(), paused.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if row.Status != run.StatusCompleted || f.executed.Load() != 1 {
		t.Errorf("run %s after its approval was resolved (tool ran %d times), want COMPLETED", row.Status, f.executed.Load())
	}
}
