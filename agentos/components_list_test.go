package agentos

import (
	"encoding/json"
	"testing"
)

// TestComponents_ListedWithTheConfiguredOnes: GET /agents, /teams and
// /workflows list the stored components the caller sees after the
// configured ones, marked is_component (as Agno 3.0), by the catalog's
// visibility rule: the caller's own, shared ones (created by an admin) and
// other users' published ones; another user's draft is neither listed nor
// readable (404). GET /agents/{id} serves a stored agent.
func TestComponents_ListedWithTheConfiguredOnes(t *testing.T) {
	t.Parallel()
	for name, open := range componentDBs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newCompFixture(t, open(t))
			model := f.script(t, "m", "hi", "")
			create := func(who map[string]string, id, kind, stage string, cfg map[string]any) {
				t.Helper()
				want(t, f.send(t, who, "POST", "/components", jsonBody(map[string]any{"name": id, "component_id": id, "component_type": kind,
					"stage": stage, "config": cfg})), 201)
			}
			create(f.alice, "alices-agent", "agent", "published", map[string]any{"model": model})
			create(f.alice, "alices-draft", "agent", "draft", map[string]any{"model": model})
			create(f.bob, "bobs-draft", "agent", "draft", map[string]any{"model": model})
			create(f.root, "shared-agent", "agent", "published", map[string]any{"model": model})
			create(f.alice, "alices-team", "team", "draft", map[string]any{"model": model, "members": []string{"alices-agent"}})

			ids := func(who map[string]string, path string) map[string]bool {
				t.Helper()
				res := f.send(t, who, "GET", path, "")
				want(t, res, 200)
				var list []struct {
					ID          string `json:"id"`
					IsComponent bool   `json:"is_component"`
				}
				if err := json.Unmarshal([]byte(res.body), &list); err != nil {
					t.Fatalf("%s: %v: %s", path, err, res.body)
				}
				out := map[string]bool{}
				for _, e := range list {
					out[e.ID] = e.IsComponent
				}
				return out
			}
			agents := ids(f.alice, "/agents")
			if !agents["alices-agent"] || !agents["alices-draft"] || !agents["shared-agent"] {
				t.Errorf("alice's /agents = %v, want her stored agents and the shared one, is_component true", agents)
			}
			if _, ok := agents["bobs-draft"]; ok {
				t.Errorf("alice's /agents lists bob's draft: %v", agents)
			}
			bobs := ids(f.bob, "/agents")
			if !bobs["bobs-draft"] || !bobs["shared-agent"] || !bobs["alices-agent"] {
				t.Errorf("bob's /agents = %v, want his draft, the shared agent and alice's published one", bobs)
			}
			if _, ok := bobs["alices-draft"]; ok {
				t.Errorf("bob's /agents lists alice's draft: %v", bobs)
			}
			if teams := ids(f.alice, "/teams"); !teams["alices-team"] {
				t.Errorf("alice's /teams = %v", teams)
			}
			if teams := ids(f.bob, "/teams"); len(teams) != 0 {
				t.Errorf("bob's /teams = %v", teams)
			}
			want(t, f.send(t, f.alice, "GET", "/agents/alices-draft", ""), 200, `"id":"alices-draft"`, `"is_component":true`)
			want(t, f.send(t, f.bob, "GET", "/agents/alices-draft", ""), 404)
			want(t, f.send(t, f.bob, "GET", "/teams/alices-team", ""), 404)
		})
	}
}
