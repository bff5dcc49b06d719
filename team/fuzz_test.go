package team

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// FuzzContinueRun_StoredRun: continuing a stored team run, whatever its
// run_data holds (member_responses, requirements naming members, a task
// list in session_state), never panics.
func FuzzContinueRun_StoredRun(f *testing.F) {
	f.Add([]byte(`{"run_id":"r","status":"PAUSED","requirements":[{"id":"c","member_agent_id":"w","member_run_id":"m","tool_execution":{"tool_call_id":"c","tool_name":"deploy","requires_confirmation":true,"confirmed":true}}],"member_responses":[{"run_id":"m","agent_id":"w","status":"PAUSED","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"deploy","arguments":"{}"}}]}]}],"messages":[{"role":"assistant","tool_calls":[{"id":"d","type":"function","function":{"name":"delegate_task_to_members","arguments":"{\"task\":\"x\"}"}}]}],"tools":[{"tool_call_id":"d","tool_name":"delegate_task_to_members","tool_args":{"task":"x"}}],"session_state":{"_team_tasks":{"tasks":[{"id":"t1","status":"in_progress"}]}}}`))
	f.Add([]byte(`{"status":"PAUSED","member_responses":[1,"x",null]}`))
	f.Add([]byte(`{"status":"PAUSED","session_state":{"_team_tasks":[1,2]}}`))
	w, _ := agent.New(agent.Config{ID: "w", Model: scripted.Reply("ok")})
	tm, _ := New(Config{ID: "t", Mode: ModeTasks, Model: scripted.Reply("done"), Members: []*agent.Agent{w}})
	bc, _ := New(Config{ID: "b", Mode: ModeBroadcast, Model: scripted.Reply("done"), Members: []*agent.Agent{w}})
	f.Fuzz(func(t *testing.T, data []byte) {
		var out run.Output
		if json.Unmarshal(data, &out) != nil {
			return
		}
		for _, team := range []*Team{tm, bc} {
			cp := out
			_, _ = team.ContinueRun(context.Background(), &cp)
		}
	})
}
