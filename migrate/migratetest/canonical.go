package migratetest

import (
	"encoding/json"
	"strings"
)

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func agentRun(id, agent, session string, created int64, extra map[string]any) map[string]any {
	r := map[string]any{
		"run_id": id, "agent_id": agent, "agent_name": "Agent " + agent, "session_id": session,
		"user_id": "someone-else", "status": "COMPLETED", "created_at": created,
		"content": "answer of " + id, "content_type": "str", "model": "gpt-4o", "model_provider": "OpenAI",
		"input":    map[string]any{"input_content": "question of " + id},
		"messages": []any{map[string]any{"role": "user", "content": "question of " + id}, map[string]any{"role": "assistant", "content": "answer of " + id}},
		"metrics":  map[string]any{"input_tokens": 12, "output_tokens": 34, "total_tokens": 46, "duration": 1.25},
	}
	for k, v := range extra {
		if v == nil {
			delete(r, k)
			continue
		}
		r[k] = v
	}
	return r
}

func array(elems ...any) []byte { return mustJSON(elems) }

// Canonical returns the awkward sessions a migration must handle: agent, team
// (member runs before the team run, which embeds member_responses) and
// workflow sessions; SQL NULL, JSON null and [] runs; unicode; a 1 MB run;
// differing field sets and unknown fields; a string-encoded element; a run
// without created_at; and broken rows (not JSON, an object, elements without
// run_id, a repeated run_id). Expected derives what a migration yields.
func Canonical() []Session {
	const t0 = 1_700_000_000
	member1 := agentRun("run-m1", "researcher", "s-team", t0+100, map[string]any{"parent_run_id": "run-t1", "user_id": nil})
	member2 := agentRun("run-m2", "writer", "s-team", t0+101, map[string]any{"parent_run_id": "run-t1", "status": "ERROR"})
	team := map[string]any{
		"run_id": "run-t1", "team_id": "newsroom", "team_name": "Newsroom", "session_id": "s-team", "status": "COMPLETED",
		"created_at": t0 + 99, "content": "team answer", "member_responses": []any{member1, member2},
	}
	big := agentRun("run-big", "a1", "s-big", t0, map[string]any{"content": strings.Repeat("0123456789abcdef", 1<<16)}) // 1 MiB
	unicode := agentRun("run-uni", "a1", "s-unicode", t0, map[string]any{
		"content":  "héllo — 世界 🚀 \"quoted\" back\\slash\nnew line\ttab \u2028",
		"messages": []any{map[string]any{"role": "user", "content": "Grüße, Ωμέγα, emoji 👩‍💻"}},
	})
	// Agno 2.x workflow runs store their input as the bare value, not as a RunInput object.
	workflowRun := map[string]any{"run_id": "run-w1", "workflow_id": "pipeline", "workflow_name": "Pipeline", "session_id": "s-workflow",
		"input": "fetch today's headlines", "status": "RUNNING", "created_at": t0 + 5.75,
		"step_results": []any{map[string]any{"step_name": "fetch", "content": "ok"}}}
	encodedElem := string(mustJSON(agentRun("run-str", "a1", "s-mixed", t0+3, nil)))

	return []Session{
		{SessionID: "s-agent", SessionType: "agent", AgentID: "a1", UserID: "u1", CreatedAt: t0, Runs: array(
			agentRun("run-a1", "a1", "s-agent", t0+1, map[string]any{"events": []any{}, "legacy_only_field": map[string]any{"kept": true}}),
			agentRun("run-a2", "a1", "s-agent", t0+2, map[string]any{"messages": nil, "status": "PAUSED",
				"requirements": []any{map[string]any{"id": "req-1", "kind": "confirmation"}}}),
			agentRun("run-a3", "a1", "s-agent", t0+3, map[string]any{"status": "cancelled", "reasoning_content": "thinking…"}),
		)},
		{SessionID: "s-team", SessionType: "team", TeamID: "newsroom", UserID: "u2", CreatedAt: t0 + 90, Runs: array(member1, member2, team)},
		{SessionID: "s-workflow", SessionType: "workflow", WorkflowID: "pipeline", CreatedAt: t0 + 5, Runs: array(workflowRun)},
		{SessionID: "s-null-sql", SessionType: "agent", AgentID: "a1", UserID: "u1", CreatedAt: t0},
		{SessionID: "s-null-json", SessionType: "agent", AgentID: "a1", UserID: "u1", CreatedAt: t0, Runs: []byte("null")},
		{SessionID: "s-empty", SessionType: "agent", AgentID: "a1", CreatedAt: t0, Runs: []byte("[]")},
		{SessionID: "s-unicode", SessionType: "agent", AgentID: "a1", UserID: "ユーザー", CreatedAt: t0, Runs: array(unicode)},
		{SessionID: "s-big", SessionType: "agent", AgentID: "a1", UserID: "u1", CreatedAt: t0, Runs: array(big)},
		{SessionID: "s-mixed", SessionType: "agent", AgentID: "a1", UserID: "u3", CreatedAt: t0 + 7, Runs: array(
			agentRun("run-x0", "a1", "s-mixed", t0, map[string]any{"created_at": nil}), // falls back to the session's created_at
			map[string]any{"agent_id": "a1", "content": "no run id"},
			encodedElem,
			42,
			agentRun("run-x4", "a1", "s-mixed", t0+4, map[string]any{"future_field": []any{1, 2, 3}, "metrics": nil}),
		)},
		{SessionID: "s-dup", SessionType: "agent", AgentID: "a1", UserID: "u1", CreatedAt: t0, Runs: array(
			agentRun("run-d", "a1", "s-dup", t0, map[string]any{"content": "first"}),
			agentRun("run-d", "a1", "s-dup", t0+1, map[string]any{"content": "second"}),
			agentRun("run-d2", "a1", "s-dup", t0+2, nil),
		)},
		{SessionID: "s-invalid", SessionType: "agent", AgentID: "a1", UserID: "u1", CreatedAt: t0, Runs: []byte(`[{"run_id": "run-broken", "content": "trunc`)},
		{SessionID: "s-object", SessionType: "agent", AgentID: "a1", UserID: "u1", CreatedAt: t0, Runs: mustJSON(agentRun("run-obj", "a1", "s-object", t0, nil))},
	}
}

// CanonicalFor returns Canonical plus the sessions only some layouts can
// hold: on Postgres with the older JSON column type, a run holding U+0000
// (which that type accepts and JSONB rejects) between two ordinary runs.
func CanonicalFor(l Layout) []Session {
	out := Canonical()
	l = l.withDefaults()
	if l.Dialect == "postgres" && l.JSONType == "json" {
		const t0 = 1_700_000_000
		out = append(out, Session{SessionID: "s-nul", SessionType: "agent", AgentID: "a1", UserID: "u1", CreatedAt: t0, Runs: array(
			agentRun("run-n0", "a1", "s-nul", t0, nil),
			agentRun("run-nul", "a1", "s-nul", t0+1, map[string]any{"content": "before\x00after"}),
			agentRun("run-n2", "a1", "s-nul", t0+2, nil),
		)})
	}
	return out
}

// ExpectedRun is a runs-table row a correct migration produces.
type ExpectedRun struct {
	RunID, SessionID, RunType, AgentID, TeamID, WorkflowID, UserID, ParentRunID, Status string
	RunIndex                                                                            int64
	CreatedAt                                                                           int64
	// Data is the element's JSON (string encoding removed).
	Data json.RawMessage
}

// ExpectedBad is a row (Position -1) or element a migration must record.
type ExpectedBad struct {
	SessionID string
	Position  int
}

// Expected derives, independently of the migrate package, the rows and bad
// records migrating sessions must yield.
func Expected(sessions []Session) ([]ExpectedRun, []ExpectedBad) {
	return ExpectedFor(Layout{}, sessions)
}

// ExpectedFor is Expected for a layout: on Postgres a run holding U+0000 is
// a bad row, since the runs table's JSONB cannot store it.
func ExpectedFor(l Layout, sessions []Session) ([]ExpectedRun, []ExpectedBad) {
	var runs []ExpectedRun
	var bad []ExpectedBad
	for _, s := range sessions {
		if s.Runs == nil || string(s.Runs) == "null" {
			continue
		}
		var elems []json.RawMessage
		if !json.Valid(s.Runs) || json.Unmarshal(s.Runs, &elems) != nil {
			bad = append(bad, ExpectedBad{s.SessionID, -1})
			continue
		}
		seen := map[string]bool{}
		for i, e := range elems {
			var str string
			if json.Unmarshal(e, &str) == nil {
				e = json.RawMessage(str)
			}
			var obj map[string]any
			if json.Unmarshal(e, &obj) != nil {
				bad = append(bad, ExpectedBad{s.SessionID, i})
				continue
			}
			id, _ := obj["run_id"].(string)
			if id == "" || seen[id] || l.Dialect == "postgres" && strings.Contains(string(mustJSON(obj)), `\u0000`) {
				bad = append(bad, ExpectedBad{s.SessionID, i})
				continue
			}
			seen[id] = true
			get := func(k string) string { v, _ := obj[k].(string); return v }
			r := ExpectedRun{RunID: id, SessionID: s.SessionID, AgentID: get("agent_id"), TeamID: get("team_id"),
				WorkflowID: get("workflow_id"), UserID: s.UserID, ParentRunID: get("parent_run_id"),
				Status: strings.ToUpper(get("status")), RunIndex: int64(i), CreatedAt: s.CreatedAt, Data: e}
			if c, ok := obj["created_at"].(float64); ok {
				r.CreatedAt = int64(c)
			}
			switch {
			case r.AgentID != "":
				r.RunType = "agent"
			case r.TeamID != "":
				r.RunType = "team"
			default:
				r.RunType = "workflow"
			}
			runs = append(runs, r)
		}
	}
	return runs, bad
}
