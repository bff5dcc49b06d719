package agentos

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/agentos/config"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/workflow"
)

// componentDBs opens each backend the component routes are tested on: a
// SQLite file and a Postgres schema (a missing Postgres fails the test).
func componentDBs(t *testing.T) map[string]func(t *testing.T) *db.DB {
	return map[string]func(t *testing.T) *db.DB{
		"sqlite": func(t *testing.T) *db.DB {
			d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db"), ID: "db"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return d
		},
		"postgres": func(t *testing.T) *db.DB {
			b := make([]byte, 6)
			rand.Read(b)
			schema := "agentry_comp_" + hex.EncodeToString(b)
			d, err := postgres.Open(context.Background(), postgres.Config{DSN: pgTestDSN(), Schema: schema, ID: "db"})
			if err != nil {
				t.Fatalf("postgres test server unavailable at %s: %v", pgTestDSN(), err)
			}
			t.Cleanup(func() {
				d.Close()
				if raw, err := sql.Open("pgx", pgTestDSN()); err == nil {
					raw.ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
					raw.Close()
				}
			})
			return d
		},
	}
}

type compFixture struct {
	url              string
	db               *db.DB
	alice, bob, root map[string]string
	dir              string
}

func newCompFixture(t *testing.T, d *db.DB) *compFixture {
	t.Helper()
	ts, _ := testServer(t, Config{UserIsolation: true, Auth: Auth{Authenticator: rsaAuthenticator(t)}, DBs: []*db.DB{d},
		Components: ComponentsConfig{Policy: config.ComponentPolicy{Providers: []string{"scripted", "ollama"}}}}, nil)
	return &compFixture{url: ts.URL, db: d, dir: t.TempDir(),
		alice: bearer(rsToken(t, "alice")), bob: bearer(rsToken(t, "bob")), root: bearer(rsToken(t, "root", auth.AdminScope))}
}

// script writes a scripted model answering text (after latency) and
// returns its model spec.
func (f *compFixture) script(t *testing.T, name, text, latency string) string {
	t.Helper()
	p := filepath.Join(f.dir, name+".json")
	body, _ := json.Marshal(map[string]any{"latency": latency, "turns": []map[string]any{{"content": text}}})
	if err := os.WriteFile(p, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return "scripted:" + p
}

func (f *compFixture) send(t *testing.T, who map[string]string, method, path, body string) response {
	t.Helper()
	h := map[string]string{}
	for k, v := range who {
		h[k] = v
	}
	var r *strings.Reader
	if body != "" {
		h["Content-Type"] = "application/json"
		r = strings.NewReader(body)
	}
	if r == nil {
		return do(t, method, f.url+path, nil, h)
	}
	return do(t, method, f.url+path, r, h)
}

func (f *compFixture) run(t *testing.T, who map[string]string, kind, id string) response {
	t.Helper()
	h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for k, v := range who {
		h[k] = v
	}
	return do(t, "POST", f.url+"/"+kind+"/"+id+"/runs", strings.NewReader("message=hi&stream=false"), h)
}

func want(t *testing.T, res response, status int, subs ...string) {
	t.Helper()
	if res.status != status || !contains(res.body, subs...) {
		t.Fatalf("= %d %s, want %d with %q", res.status, res.body, status, subs)
	}
}

func jsonBody(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestComponents_CreateVersionRunAndRollback(t *testing.T) {
	t.Parallel()
	for name, open := range componentDBs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newCompFixture(t, open(t))
			v1 := f.script(t, "v1", "answer one", "")
			res := f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Helper", "component_id": "helper", "component_type": "agent",
				"stage": "published", "config": map[string]any{"model": v1, "instructions": "be brief"}}))
			want(t, res, 201, `"component_id":"helper"`, `"current_version":1`, `"user_id":"alice"`)
			want(t, f.run(t, f.alice, "agents", "helper"), 200, "answer one")

			// A new published version changes the next run; a draft does not.
			v2 := f.script(t, "v2", "answer two", "")
			want(t, f.send(t, f.alice, "POST", "/components/helper/configs", jsonBody(map[string]any{"config": map[string]any{"model": v2}})), 201, `"version":2`, `"stage":"draft"`)
			want(t, f.run(t, f.alice, "agents", "helper"), 200, "answer one")
			want(t, f.send(t, f.alice, "PATCH", "/components/helper/configs/2", `{"stage":"published"}`), 200, `"stage":"published"`)
			want(t, f.run(t, f.alice, "agents", "helper"), 200, "answer two")
			want(t, f.send(t, f.alice, "PATCH", "/components/helper/configs/2", `{"notes":"x"}`), 400, "immutable")

			// Rollback.
			want(t, f.send(t, f.alice, "POST", "/components/helper/configs/1/set-current", ""), 200, `"current_version":1`)
			want(t, f.run(t, f.alice, "agents", "helper"), 200, "answer one")
			want(t, f.send(t, f.alice, "GET", "/components/helper/configs/current", ""), 200, `"version":1`, "be brief")
			res = f.send(t, f.alice, "GET", "/components/helper/configs", "")
			want(t, res, 200)
			var cfgs []configView
			if err := json.Unmarshal([]byte(res.body), &cfgs); err != nil || len(cfgs) != 2 || cfgs[0].Version != 2 {
				t.Fatalf("configs = %s", res.body)
			}
			want(t, f.send(t, f.alice, "GET", "/components?component_type=agent&limit=1", ""), 200, `"total_count":1`, `"helper"`)
			want(t, f.send(t, f.alice, "GET", "/components?component_type=team", ""), 200, `"total_count":0`)

			// Archive: runs stop resolving it; restore brings it back.
			want(t, f.send(t, f.alice, "DELETE", "/components/helper", ""), 204)
			want(t, f.run(t, f.alice, "agents", "helper"), 404, "Agent not found")
			want(t, f.send(t, f.alice, "GET", "/components/helper?include_deleted=true", ""), 200, `"deleted_at"`)
			want(t, f.send(t, f.alice, "POST", "/components/helper/restore", ""), 200)
			want(t, f.run(t, f.alice, "agents", "helper"), 200, "answer one")
		})
	}
}

func TestComponents_TeamsAndWorkflowsOfStoredMembers(t *testing.T) {
	t.Parallel()
	for name, open := range componentDBs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newCompFixture(t, open(t))
			m := f.script(t, "member", "member answer", "")
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "M", "component_id": "m1", "component_type": "agent",
				"stage": "published", "config": map[string]any{"model": m}})), 201)
			lead := f.script(t, "lead", "team answer", "")
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "T", "component_id": "t1", "component_type": "team",
				"stage": "published", "config": map[string]any{"model": lead, "members": []any{map[string]any{"type": "agent", "agent_id": "m1"}}}})), 201)
			want(t, f.send(t, f.alice, "GET", "/components/t1/configs/1/links", ""), 200, `"link_kind":"member"`, `"child_component_id":"m1"`, `"child_version":1`)
			want(t, f.run(t, f.alice, "teams", "t1"), 200, "team answer")
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "W", "component_id": "w1", "component_type": "workflow",
				"stage": "published", "config": map[string]any{"steps": []any{map[string]any{"type": "Step", "name": "ask", "agent_id": "m1"}}}})), 201)
			want(t, f.send(t, f.alice, "GET", "/components/w1/configs/1/links", ""), 200, `"link_kind":"step_agent"`, `"link_key":"ask"`)
			want(t, f.run(t, f.alice, "workflows", "w1"), 200, "member answer")
			// A pinned member cannot be archived while its team is live.
			want(t, f.send(t, f.alice, "DELETE", "/components/m1", ""), 409, "referenced by")
			// A workflow's step must name an agent or team, not a workflow.
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "W2", "component_type": "team",
				"config": map[string]any{"model": lead, "members": []any{"w1"}}})), 400, "is a workflow")
		})
	}
}

func TestComponents_BadInputIsAClear4xx(t *testing.T) {
	t.Parallel()
	for name, open := range componentDBs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newCompFixture(t, open(t))
			m := f.script(t, "m", "x", "")
			agent := func(id string, cfg any) string {
				return jsonBody(map[string]any{"name": id, "component_id": id, "component_type": "agent", "stage": "published", "config": cfg})
			}
			want(t, f.send(t, f.alice, "POST", "/components", `{"name":"x","component_type":"agent","config":{"model":`), 422, "invalid JSON")
			want(t, f.send(t, f.alice, "POST", "/components", `{"name":"x","component_type":"robot"}`), 422, "component_type")
			want(t, f.send(t, f.alice, "POST", "/components", `{"name":"x","component_type":"agent","config":[1]}`), 400, "JSON object")
			want(t, f.send(t, f.alice, "POST", "/components", agent("a", map[string]any{"model": "nope:model"})), 400, "nope")
			want(t, f.send(t, f.alice, "POST", "/components", agent("a", map[string]any{"model": "openai:gpt-4o"})), 400, `provider \"openai\" is not allowed`)
			want(t, f.send(t, f.alice, "POST", "/components", agent("a", map[string]any{})), 400, "model is required")
			want(t, f.send(t, f.alice, "POST", "/components", agent("a", map[string]any{"model": m, "temperatur": 1})), 400, "temperatur")
			want(t, f.send(t, f.alice, "POST", "/components", agent("bad/id", map[string]any{"model": m})), 400, "component_id")
			want(t, f.send(t, f.alice, "POST", "/components", agent("a", map[string]any{"model": m, "id": "other"})), 400, "not the component's id")
			want(t, f.send(t, f.alice, "POST", "/components", agent("a", map[string]any{"model": m})), 201)
			want(t, f.send(t, f.alice, "POST", "/components", agent("a", map[string]any{"model": m})), 409, "not available")
			// Links to missing components, bad versions, cycles.
			team := func(id string, members ...any) string {
				return jsonBody(map[string]any{"name": id, "component_id": id, "component_type": "team", "stage": "published",
					"config": map[string]any{"model": m, "members": members}})
			}
			want(t, f.send(t, f.alice, "POST", "/components", team("t1", "ghost")), 400, `\"ghost\"`)
			want(t, f.send(t, f.alice, "POST", "/components", team("t1", "a")), 201)
			want(t, f.send(t, f.alice, "POST", "/components/t1/configs", jsonBody(map[string]any{"config": map[string]any{"model": m, "members": []any{"a"}},
				"links": []any{map[string]any{"link_kind": "member", "link_key": "k", "child_component_id": "ghost", "child_version": 1}}})), 400, "ghost")
			want(t, f.send(t, f.alice, "POST", "/components/t1/configs", jsonBody(map[string]any{"config": map[string]any{"model": m, "members": []any{"a"}},
				"links": []any{map[string]any{"link_kind": "member", "link_key": "k", "child_component_id": "a", "child_version": 2.5}}})), 400, "not an integer")
			want(t, f.send(t, f.alice, "POST", "/components/t1/configs", jsonBody(map[string]any{"config": map[string]any{"model": m, "members": []any{"t1"}}})), 409, "itself")
			want(t, f.send(t, f.alice, "POST", "/components", team("t2", "t1")), 201)
			// t1 → t2 closes t2 → t1.
			want(t, f.send(t, f.alice, "POST", "/components/t1/configs", jsonBody(map[string]any{"config": map[string]any{"model": m, "members": []any{"t2"}}})), 409, "cycle")
			want(t, f.send(t, f.alice, "PATCH", "/components/a", `{"component_type":"team"}`), 400, "fixed")
			// set_current and version are honoured or refused, never ignored.
			cfg := map[string]any{"model": m}
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "b", "component_id": "b", "component_type": "agent",
				"stage": "published", "set_current": false, "config": cfg})), 422, "set_current=false")
			want(t, f.send(t, f.alice, "POST", "/components/a/configs", jsonBody(map[string]any{"config": cfg, "stage": "published", "set_current": false})), 422, "set_current=false")
			want(t, f.send(t, f.alice, "POST", "/components/a/configs", jsonBody(map[string]any{"config": cfg, "version": 7})), 422, "version")
			want(t, f.send(t, f.alice, "PATCH", "/components/a/configs/1", `{"set_current":true}`), 422, "set_current")
			want(t, f.send(t, f.alice, "PATCH", "/components/a/configs/1", `{"version":3}`), 422, "version")
			// Agno's defaults are accepted: a draft stays a draft, a published
			// version becomes current.
			want(t, f.send(t, f.alice, "POST", "/components/a/configs", jsonBody(map[string]any{"config": cfg, "stage": "draft", "set_current": true})), 201)
			want(t, f.send(t, f.alice, "POST", "/components/a/configs", jsonBody(map[string]any{"config": cfg, "stage": "draft", "set_current": false})), 201)
			want(t, f.send(t, f.alice, "POST", "/components/a/configs", jsonBody(map[string]any{"config": cfg, "stage": "published", "set_current": true})), 201)
			want(t, f.send(t, f.alice, "GET", "/components/a", ""), 200, `"current_version":4`)
			want(t, f.send(t, f.alice, "GET", "/components/a/configs/0", ""), 422, "version")
			want(t, f.send(t, f.alice, "GET", "/components?limit=101", ""), 422, "limit")
			// Nothing half-stored: the failed writes left the versions as they were.
			res := f.send(t, f.alice, "GET", "/components/t1/configs", "")
			if want(t, res, 200); strings.Count(res.body, `"version"`) != 1 {
				t.Fatalf("t1 configs after refused writes: %s", res.body)
			}
		})
	}
}

func TestComponents_IsolationSharedAndPublished(t *testing.T) {
	t.Parallel()
	for name, open := range componentDBs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newCompFixture(t, open(t))
			m := f.script(t, "m", "ok", "")
			cfg := map[string]any{"model": m}
			// alice's private draft: bob gets exactly a missing component's answers.
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "P", "component_id": "priv", "component_type": "agent", "config": cfg})), 201)
			want(t, f.run(t, f.alice, "agents", "priv"), 200, "ok")
			for _, c := range []struct{ method, path, body string }{
				{"GET", "/components/priv", ""}, {"PATCH", "/components/priv", `{"name":"x"}`}, {"DELETE", "/components/priv", ""},
				{"GET", "/components/priv/configs", ""}, {"GET", "/components/priv/configs/1", ""}, {"POST", "/components/priv/configs/1/set-current", ""},
			} {
				want(t, f.send(t, f.bob, c.method, c.path, c.body), 404, "Component priv not found")
			}
			want(t, f.run(t, f.bob, "agents", "priv"), 404, "Agent not found")
			want(t, f.send(t, f.bob, "GET", "/components", ""), 200, `"total_count":0`)
			// A shared component (created by an admin): readable and runnable by all, writable by admins only.
			want(t, f.send(t, f.root, "POST", "/components", jsonBody(map[string]any{"name": "S", "component_id": "shared", "component_type": "agent", "config": cfg})), 201)
			want(t, f.send(t, f.bob, "GET", "/components/shared", ""), 200, `"component_id":"shared"`)
			want(t, f.run(t, f.bob, "agents", "shared"), 200, "ok")
			want(t, f.send(t, f.bob, "PATCH", "/components/shared", `{"name":"mine"}`), 403, "Cannot modify shared component")
			want(t, f.send(t, f.bob, "DELETE", "/components/shared", ""), 403, "Cannot delete shared component")
			want(t, f.send(t, f.bob, "POST", "/components/shared/configs", jsonBody(map[string]any{"config": cfg})), 403, "shared")
			want(t, f.send(t, f.root, "PATCH", "/components/shared", `{"description":"by root"}`), 200, "by root")
			// alice publishes: bob reads the published version only, and may not write.
			want(t, f.send(t, f.alice, "POST", "/components/priv/configs", jsonBody(map[string]any{"config": cfg, "stage": "published"})), 201, `"version":2`)
			want(t, f.send(t, f.bob, "GET", "/components/priv", ""), 200, `"current_version":2`)
			want(t, f.send(t, f.bob, "GET", "/components/priv/configs/1", ""), 404, "not found")
			res := f.send(t, f.bob, "GET", "/components/priv/configs", "")
			if want(t, res, 200); strings.Count(res.body, `"version"`) != 1 {
				t.Fatalf("bob lists alice's drafts: %s", res.body)
			}
			want(t, f.send(t, f.bob, "PATCH", "/components/priv", `{"name":"x"}`), 403, "owned by another user")
			want(t, f.run(t, f.bob, "agents", "priv"), 200, "ok")
			// Two users minting from the same name get different ids.
			a := f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Same Name", "component_type": "agent", "config": cfg}))
			b := f.send(t, f.bob, "POST", "/components", jsonBody(map[string]any{"name": "Same Name", "component_type": "agent", "config": cfg}))
			want(t, a, 201, `"component_id":"same-name-`)
			want(t, b, 201, `"component_id":"same-name-`)
			if a.body == b.body {
				t.Fatal("two users' components share an id")
			}
		})
	}
}

// TestComponents_AWorkflowAsAStepOfAStoredWorkflow: a stored workflow's
// steps run a stored workflow (pinned by a step_workflow link) and a
// configured one, as Agno's Step(workflow=…); a workflow containing itself,
// directly or through another, is refused when written.
func TestComponents_AWorkflowAsAStepOfAStoredWorkflow(t *testing.T) {
	t.Parallel()
	for name, open := range componentDBs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			shout, err := agent.New(agent.Config{ID: "shout", Model: scripted.Reply("configured answer"), DB: d})
			if err != nil {
				t.Fatal(err)
			}
			cfgFlow, err := workflow.New(workflow.Config{ID: "cfgflow", Name: "Configured", DB: d, Steps: []workflow.Step{{Name: "shout", Runner: shout}}})
			if err != nil {
				t.Fatal(err)
			}
			ts, _ := testServer(t, Config{UserIsolation: true, Auth: Auth{Authenticator: rsaAuthenticator(t)}, DBs: []*db.DB{d},
				Workflows:  []*workflow.Workflow{cfgFlow},
				Components: ComponentsConfig{Policy: config.ComponentPolicy{Providers: []string{"scripted"}}}}, nil)
			f := &compFixture{url: ts.URL, db: d, dir: t.TempDir(), alice: bearer(rsToken(t, "alice"))}
			m := f.script(t, "member", "inner answer", "")
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "M", "component_id": "m1", "component_type": "agent",
				"stage": "published", "config": map[string]any{"model": m}})), 201)
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Inner", "component_id": "inner", "component_type": "workflow",
				"stage": "published", "config": map[string]any{"steps": []any{map[string]any{"type": "Step", "name": "ask", "agent_id": "m1"}}}})), 201)
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Outer", "component_id": "outer", "component_type": "workflow",
				"stage": "published", "config": map[string]any{"steps": []any{
					map[string]any{"type": "Step", "name": "nested", "workflow_id": "inner"},
					map[string]any{"type": "Step", "name": "configured", "workflow_id": "cfgflow"},
				}}})), 201)
			want(t, f.send(t, f.alice, "GET", "/components/outer/configs/1/links", ""), 200,
				`"link_kind":"step_workflow"`, `"link_key":"nested"`, `"child_component_id":"inner"`, `"child_version":1`)
			res := f.run(t, f.alice, "workflows", "outer")
			want(t, res, 200, "inner answer", "configured answer")

			// Itself, directly: refused.
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Self", "component_id": "self", "component_type": "workflow",
				"config": map[string]any{"steps": []any{map[string]any{"name": "x", "agent_id": "m1"},
					map[string]any{"loop": map[string]any{"steps": []any{map[string]any{"workflow_id": "self"}}}}}}})), 409, "self contains itself")
			// Through another: inner's new version would run outer, which runs inner.
			want(t, f.send(t, f.alice, "POST", "/components/inner/configs", jsonBody(map[string]any{"config": map[string]any{
				"steps": []any{map[string]any{"name": "back", "workflow_id": "outer"}}}})), 409, "inner contains itself", "inner → outer → inner")
			// A step_workflow must name a workflow.
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Bad", "component_id": "bad", "component_type": "workflow",
				"config": map[string]any{"steps": []any{map[string]any{"name": "x", "workflow_id": "m1"}}}})), 400, "m1 is a agent, not a workflow")
			want(t, f.run(t, f.alice, "workflows", "outer"), 200, "inner answer")
		})
	}
}
