package agentos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/run"
)

// TestContinueRun_AnswersForAnotherKindOfRunAre422: a continue's answers
// are for one kind of run: tools and requirements for an agent's or a
// team's, step_requirements for a workflow's. The other kind's were decoded
// and dropped, so a continue carrying both went on as if the dropped half
// had not been sent; now it is 422 naming the field, and the run stays
// PAUSED.
func TestContinueRun_AnswersForAnotherKindOfRunAre422(t *testing.T) {
	t.Parallel()
	f, d := workflowFixture(t, Config{})

	out := decode[run.Output](t, postForm(t, f.url+"/agents/hitl/runs", map[string]string{"message": "delete it", "stream": "false"}, nil))
	if out.Status != run.StatusPaused || len(out.Tools) != 1 {
		t.Fatalf("run = %+v", out)
	}
	tools := fmt.Sprintf(`[{"tool_call_id":%q,"confirmed":true}]`, out.Tools[0].ToolCallID)
	steps := `[{"step_id":"s","step_name":"ask","confirmed":true}]`
	res := postForm(t, f.url+"/agents/hitl/runs/"+out.RunID+"/continue", map[string]string{"tools": tools, "step_requirements": steps, "stream": "false"}, nil)
	if res.status != http.StatusUnprocessableEntity || !strings.Contains(res.detail(t), `"step_requirements"`) {
		t.Fatalf("agent continue with step_requirements = %d %s", res.status, res.body)
	}
	if storedStatus(f.db, out.RunID) != run.StatusPaused || f.executed.Load() != 0 {
		t.Fatalf("refused continue changed the run: %s, tool executed %d", storedStatus(f.db, out.RunID), f.executed.Load())
	}
	// An empty list asks for nothing.
	res = postForm(t, f.url+"/agents/hitl/runs/"+out.RunID+"/continue", map[string]string{"tools": tools, "step_requirements": "[]", "stream": "false"}, nil)
	if res.status != http.StatusOK || storedStatus(f.db, out.RunID) != run.StatusCompleted {
		t.Fatalf("agent continue = %d %s", res.status, res.body)
	}

	paused := decode[run.Output](t, postForm(t, f.url+"/workflows/every/runs", map[string]string{"message": "go", "stream": "false"}, nil))
	if paused.Status != run.StatusPaused || len(paused.StepRequirements) != 1 {
		t.Fatalf("workflow run = %+v", paused)
	}
	req := paused.StepRequirements[0]
	req.UserInput = map[string]any{"count": 2}
	b, _ := json.Marshal([]run.StepRequirement{req})
	for _, field := range []string{"tools", "requirements"} {
		res := postForm(t, f.url+"/workflows/every/runs/"+paused.RunID+"/continue",
			map[string]string{"step_requirements": string(b), field: `[{"tool_call_id":"x","confirmed":true}]`, "stream": "false"}, nil)
		if res.status != http.StatusUnprocessableEntity || !strings.Contains(res.detail(t), `"`+field+`"`) {
			t.Fatalf("workflow continue with %s = %d %s", field, res.status, res.body)
		}
	}
	if storedStatus(d, paused.RunID) != run.StatusPaused {
		t.Fatalf("refused continue changed the workflow run: %s", storedStatus(d, paused.RunID))
	}
	res = postForm(t, f.url+"/workflows/every/runs/"+paused.RunID+"/continue", map[string]string{"step_requirements": string(b), "tools": "[]", "stream": "false"}, nil)
	if res.status != http.StatusOK || storedStatus(d, paused.RunID) != run.StatusCompleted {
		t.Fatalf("workflow continue = %d %s", res.status, res.body)
	}
}
