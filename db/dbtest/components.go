package dbtest

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
)

// componentTests cover the component registry (SQL drivers).
var componentTests = map[string]func(t *testing.T, d *db.DB){
	"Components_VersionsAndCurrentPointer": func(t *testing.T, d *db.DB) {
		c, cfg, err := d.CreateComponent(bg, &db.Component{ComponentID: "a1", ComponentType: db.ComponentAgent, Name: "A"},
			&db.ComponentConfig{Config: json.RawMessage(`{"model":"openai:gpt-4o"}`), Stage: db.StagePublished}, nil)
		noErr(t, err)
		if c.CurrentVersion != 1 || cfg.Version != 1 {
			t.Fatalf("created %+v %+v", c, cfg)
		}
		_, _, err = d.CreateComponent(bg, &db.Component{ComponentID: "a1", ComponentType: db.ComponentAgent},
			&db.ComponentConfig{Config: json.RawMessage(`{}`)}, nil)
		wantErr(t, err, db.ErrExists)
		v2, err := d.AddConfig(bg, "a1", &db.ComponentConfig{Config: json.RawMessage(`{"model":"x:y","name":"Draft"}`)}, nil)
		noErr(t, err)
		if v2.Version != 2 || v2.Stage != db.StageDraft {
			t.Fatalf("v2 = %+v", v2)
		}
		cur, err := d.GetConfig(bg, "a1", 0)
		noErr(t, err)
		if cur.Version != 1 {
			t.Fatalf("current = v%d, want v1 (a draft is not current)", cur.Version)
		}
		_, err = d.SetCurrentVersion(bg, "a1", 2)
		wantErr(t, err, db.ErrDraftConfig)
		pub := db.StagePublished
		_, err = d.UpdateConfig(bg, "a1", 2, db.ConfigPatch{Stage: &pub})
		noErr(t, err)
		got, err := d.GetComponent(bg, "a1", false)
		noErr(t, err)
		if got.CurrentVersion != 2 || got.Name != "Draft" {
			t.Fatalf("after publish: %+v", got)
		}
		_, err = d.UpdateConfig(bg, "a1", 2, db.ConfigPatch{Config: json.RawMessage(`{}`)})
		wantErr(t, err, db.ErrPublishedConfig)
		back, err := d.SetCurrentVersion(bg, "a1", 1)
		noErr(t, err)
		if back.CurrentVersion != 1 {
			t.Fatalf("rollback: %+v", back)
		}
		v3, err := d.AddConfig(bg, "a1", &db.ComponentConfig{Config: json.RawMessage(`{"model":"x:z"}`)}, nil)
		noErr(t, err)
		noErr(t, d.DeleteConfig(bg, "a1", v3.Version))
		_, err = d.GetConfig(bg, "a1", v3.Version)
		wantErr(t, err, db.ErrNotFound)
		v4, err := d.AddConfig(bg, "a1", &db.ComponentConfig{Config: json.RawMessage(`{"model":"x:z"}`)}, nil)
		noErr(t, err)
		if v4.Version != 4 {
			t.Fatalf("a deleted version number was reused: v%d", v4.Version)
		}
		wantErr(t, d.DeleteConfig(bg, "a1", 1), db.ErrPublishedConfig)
		list, err := d.ListConfigs(bg, "a1")
		noErr(t, err)
		if len(list) != 3 || list[0].Version != 4 {
			t.Fatalf("configs = %+v", list)
		}
	},
	"Components_VisibilityAndStrictWrites": func(t *testing.T, d *db.DB) {
		alice, bob := db.WithUserScope(bg, "alice"), db.WithUserScope(bg, "bob")
		_, _, err := d.CreateComponent(alice, &db.Component{ComponentID: "priv", ComponentType: db.ComponentAgent},
			&db.ComponentConfig{Config: json.RawMessage(`{}`)}, nil)
		noErr(t, err)
		_, _, err = d.CreateComponent(bg, &db.Component{ComponentID: "shared", ComponentType: db.ComponentAgent},
			&db.ComponentConfig{Config: json.RawMessage(`{}`)}, nil)
		noErr(t, err)
		_, _, err = d.CreateComponent(alice, &db.Component{ComponentID: "pub", ComponentType: db.ComponentTeam},
			&db.ComponentConfig{Config: json.RawMessage(`{}`), Stage: db.StagePublished}, nil)
		noErr(t, err)
		_, err = d.GetComponent(bob, "priv", false)
		wantErr(t, err, db.ErrNotFound)
		_, err = d.GetConfig(bob, "priv", 1)
		wantErr(t, err, db.ErrNotFound)
		for _, id := range []string{"shared", "pub"} {
			if _, err := d.GetComponent(bob, id, false); err != nil {
				t.Fatalf("bob cannot see %s: %v", id, err)
			}
		}
		list, n, err := d.ListComponents(bob, db.ComponentFilter{Limit: 10, Page: 1})
		noErr(t, err)
		if n != 2 || len(list) != 2 {
			t.Fatalf("bob lists %d (%+v)", n, list)
		}
		list, n, err = d.ListComponents(alice, db.ComponentFilter{ComponentType: db.ComponentTeam, Limit: 10, Page: 1})
		noErr(t, err)
		if n != 1 || list[0].ComponentID != "pub" || list[0].UserID != "alice" {
			t.Fatalf("alice's teams %d %+v", n, list)
		}
		name := "x"
		_, err = d.UpdateComponent(bob, "shared", db.ComponentPatch{Name: &name})
		wantErr(t, err, db.ErrNotFound)
		_, err = d.UpdateComponent(bob, "pub", db.ComponentPatch{Name: &name})
		wantErr(t, err, db.ErrNotFound)
		_, err = d.AddConfig(bob, "pub", &db.ComponentConfig{Config: json.RawMessage(`{}`)}, nil)
		wantErr(t, err, db.ErrNotFound)
		wantErr(t, d.ArchiveComponent(bob, "shared"), db.ErrNotFound)
		_, err = d.UpdateComponent(bg, "shared", db.ComponentPatch{Name: &name})
		noErr(t, err)
	},
	"Components_LinksRefuseMissingArchivedAndCycles": func(t *testing.T, d *db.DB) {
		pub := &db.ComponentConfig{Config: json.RawMessage(`{}`), Stage: db.StagePublished}
		for _, id := range []string{"m1", "m2"} {
			_, _, err := d.CreateComponent(bg, &db.Component{ComponentID: id, ComponentType: db.ComponentAgent}, pub, nil)
			noErr(t, err)
		}
		link := func(child string, v int) []db.ComponentLink {
			return []db.ComponentLink{{LinkKind: "member", LinkKey: "member_0", ChildComponentID: child, ChildVersion: v}}
		}
		_, _, err := d.CreateComponent(bg, &db.Component{ComponentID: "t1", ComponentType: db.ComponentTeam}, pub, link("nope", 1))
		wantErr(t, err, db.ErrInvalidRecord)
		_, _, err = d.CreateComponent(bg, &db.Component{ComponentID: "t1", ComponentType: db.ComponentTeam}, pub, link("m1", 9))
		wantErr(t, err, db.ErrInvalidRecord)
		_, _, err = d.CreateComponent(bg, &db.Component{ComponentID: "t1", ComponentType: db.ComponentTeam}, pub, link("m1", 1))
		noErr(t, err)
		links, err := d.ListLinks(bg, "t1", 1)
		noErr(t, err)
		if len(links) != 1 || links[0].ChildComponentID != "m1" || links[0].ChildVersion != 1 {
			t.Fatalf("links = %+v", links)
		}
		wantErr(t, d.ArchiveComponent(bg, "m1"), db.ErrComponentInUse)
		// m1 → t1 would close t1 → m1.
		_, err = d.AddConfig(bg, "m1", &db.ComponentConfig{Config: json.RawMessage(`{}`)}, link("t1", 1))
		wantErr(t, err, db.ErrComponentCycle)
		_, err = d.AddConfig(bg, "m2", &db.ComponentConfig{Config: json.RawMessage(`{}`)}, link("m2", 1))
		wantErr(t, err, db.ErrComponentCycle)
		noErr(t, d.ArchiveComponent(bg, "t1"))
		noErr(t, d.ArchiveComponent(bg, "m1"))
		_, err = d.RestoreComponent(bg, "t1")
		wantErr(t, err, db.ErrConflict)
		_, err = d.RestoreComponent(bg, "m1")
		noErr(t, err)
		_, err = d.RestoreComponent(bg, "t1")
		noErr(t, err)
	},
	"Components_ConcurrentVersionsGetDistinctNumbers": func(t *testing.T, d *db.DB) {
		_, _, err := d.CreateComponent(bg, &db.Component{ComponentID: "c", ComponentType: db.ComponentAgent},
			&db.ComponentConfig{Config: json.RawMessage(`{}`)}, nil)
		noErr(t, err)
		const n = 8
		var wg sync.WaitGroup
		versions := make([]int, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stage := db.StageDraft
				if i%2 == 0 {
					stage = db.StagePublished
				}
				cfg, err := d.AddConfig(bg, "c", &db.ComponentConfig{Config: json.RawMessage(`{"n":1}`), Stage: stage}, nil)
				errs[i] = err
				if err == nil {
					versions[i] = cfg.Version
				}
			}()
		}
		wg.Wait()
		seen := map[int]bool{}
		for i := range n {
			noErr(t, errs[i])
			if versions[i] < 2 || versions[i] > n+1 || seen[versions[i]] {
				t.Fatalf("versions = %v", versions)
			}
			seen[versions[i]] = true
		}
		list, err := d.ListConfigs(bg, "c")
		noErr(t, err)
		if len(list) != n+1 {
			t.Fatalf("%d configs, want %d", len(list), n+1)
		}
	},
}
