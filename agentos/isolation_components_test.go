package agentos

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
)

// The isolation matrix's rows for the /components routes: alice's private
// (unpublished) components c-alice (two draft versions, v1 linking her
// agent c-alice-m) and c-alice-old (archived), and bob's c-bob. Shared and
// published components are readable by others by design; their rules are
// tested in routes_components_test.go.

const componentModel = `{"model":"ollama:llama3.2"}`

func seedComponents(t *testing.T, d *db.DB) {
	t.Helper()
	alice, bob := db.WithUserScope(context.Background(), "alice"), db.WithUserScope(context.Background(), "bob")
	create := func(ctx context.Context, id string, links []db.ComponentLink) {
		t.Helper()
		if _, _, err := d.CreateComponent(ctx, &db.Component{ComponentID: id, ComponentType: db.ComponentAgent, Name: id},
			&db.ComponentConfig{Config: json.RawMessage(componentModel)}, links); err != nil {
			t.Fatal(err)
		}
	}
	create(alice, "c-alice-m", nil)
	create(alice, "c-alice", []db.ComponentLink{{LinkKind: "member", LinkKey: "member_0", ChildComponentID: "c-alice-m", ChildVersion: 1}})
	if _, err := d.AddConfig(alice, "c-alice", &db.ComponentConfig{Config: json.RawMessage(componentModel)}, nil); err != nil {
		t.Fatal(err)
	}
	create(alice, "c-alice-old", nil)
	if err := d.ArchiveComponent(alice, "c-alice-old"); err != nil {
		t.Fatal(err)
	}
	create(bob, "c-bob", nil)
}

// componentsView renders the components a scope sees, with their versions.
func componentsView(t *testing.T, d *db.DB, ctx context.Context, b *strings.Builder) {
	t.Helper()
	list, _, err := d.ListComponents(ctx, db.ComponentFilter{IncludeDeleted: true, Limit: 1000, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		fmt.Fprintf(b, "component %s %s %q %q %d %d %d\n", c.ComponentID, c.UserID, c.Name, c.Description, c.CurrentVersion, c.UpdatedAt, c.DeletedAt)
		if c.DeletedAt != 0 {
			continue
		}
		cfgs, err := d.ListConfigs(ctx, c.ComponentID)
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range cfgs {
			fmt.Fprintf(b, "  config v%d %s %q %s %d\n", cfg.Version, cfg.Stage, cfg.Notes, cfg.Config, cfg.UpdatedAt)
		}
	}
}

func componentCases() []isoCase {
	component := func(id string, check func(*testing.T, *db.Component, string)) func(*testing.T, fixture, string, response) {
		return func(t *testing.T, f fixture, caller string, _ response) {
			t.Helper()
			c, err := f.db.GetComponent(context.Background(), id, true)
			if err != nil {
				t.Fatal(err)
			}
			check(t, c, caller)
		}
	}
	created := func(user string) func(*testing.T, fixture, response) {
		return func(t *testing.T, f fixture, res response) {
			t.Helper()
			var v componentView
			if err := json.Unmarshal([]byte(res.body), &v); err != nil || v.ComponentID == "" {
				t.Fatalf("create answer %s: %v", res.body, err)
			}
			c, err := f.db.GetComponent(context.Background(), v.ComponentID, false)
			if err != nil || c.UserID != user {
				t.Errorf("created %+v, %v; want owned by %q", c, err, user)
			}
		}
	}
	return []isoCase{
		{name: "list components", method: "GET", path: "/components?include_deleted=true", ok: 200, list: true,
			effect: func(t *testing.T, _ fixture, caller string, res response) {
				if strings.Contains(res.body, "c-bob") != (caller == admin) {
					t.Errorf("%s's component list: %s", caller, res.body)
				}
			}},
		{name: "create component", method: "POST", path: "/components", body: `{"name":"made","component_type":"agent","config":` + componentModel + `}`,
			ok: 201, list: true, effect: func(t *testing.T, f fixture, caller string, res response) {
				user := "alice"
				if caller == admin {
					user = "" // an admin's component is shared
				}
				created(user)(t, f, res)
			}, otherEffect: created("bob")},
		{name: "get component", method: "GET", path: "/components/c-alice", ok: 200},
		{name: "patch component", method: "PATCH", path: "/components/c-alice", body: `{"description":"changed"}`, ok: 200,
			effect: component("c-alice", func(t *testing.T, c *db.Component, _ string) {
				if c.Description != "changed" || c.UserID != "alice" {
					t.Errorf("c-alice = %+v", c)
				}
			})},
		{name: "delete component", method: "DELETE", path: "/components/c-alice", ok: 204,
			effect: component("c-alice", func(t *testing.T, c *db.Component, _ string) {
				if c.DeletedAt == 0 {
					t.Errorf("c-alice not archived: %+v", c)
				}
			})},
		{name: "restore component", method: "POST", path: "/components/c-alice-old/restore", ok: 200,
			effect: component("c-alice-old", func(t *testing.T, c *db.Component, _ string) {
				if c.DeletedAt != 0 {
					t.Errorf("c-alice-old still archived: %+v", c)
				}
			})},
		{name: "list configs", method: "GET", path: "/components/c-alice/configs", ok: 200},
		{name: "create config", method: "POST", path: "/components/c-alice/configs", body: `{"config":` + componentModel + `,"notes":"v3"}`, ok: 201,
			effect: func(t *testing.T, f fixture, _ string, _ response) {
				if cfg, err := f.db.GetConfig(context.Background(), "c-alice", 3); err != nil || cfg.Notes != "v3" {
					t.Errorf("c-alice v3 = %+v, %v", cfg, err)
				}
			}},
		{name: "get current config", method: "GET", path: "/components/c-alice/configs/current", ok: 200},
		{name: "get config version", method: "GET", path: "/components/c-alice/configs/1", ok: 200},
		{name: "patch config", method: "PATCH", path: "/components/c-alice/configs/1", body: `{"notes":"edited"}`, ok: 200,
			effect: func(t *testing.T, f fixture, _ string, _ response) {
				if cfg, err := f.db.GetConfig(context.Background(), "c-alice", 1); err != nil || cfg.Notes != "edited" {
					t.Errorf("c-alice v1 = %+v, %v", cfg, err)
				}
			}},
		{name: "delete config", method: "DELETE", path: "/components/c-alice/configs/2", ok: 204,
			effect: func(t *testing.T, f fixture, _ string, _ response) {
				if _, err := f.db.GetConfig(context.Background(), "c-alice", 2); err == nil {
					t.Error("c-alice v2 still there")
				}
			}},
		// A draft cannot be current: the owner's answer is 400; the point
		// is that the other user's is a missing component's 404.
		{name: "set current config", method: "POST", path: "/components/c-alice/configs/1/set-current", ok: 400},
		{name: "get config links", method: "GET", path: "/components/c-alice/configs/1/links", ok: 200},
	}
}
