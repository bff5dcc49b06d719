package dbtest

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentryhq/agentry/db"
)

func mustLearning(t *testing.T, d *db.DB, l db.Learning) *db.Learning {
	t.Helper()
	if l.LearningType == "" {
		l.LearningType = db.EntityLearningType
	}
	if l.Content == nil {
		l.Content = json.RawMessage(`{"facts":["x"]}`)
	}
	out, err := d.UpsertLearning(bg, &l)
	if err != nil {
		t.Fatalf("UpsertLearning(%s): %v", l.LearningID, err)
	}
	return out
}

func learningIDs(t *testing.T, d *db.DB, ctxUser string, f db.LearningFilter) []string {
	t.Helper()
	ctx := bg
	if ctxUser != "" {
		ctx = db.WithUserScope(bg, ctxUser)
	}
	f.Limit, f.Page = 100, 1
	ls, n, err := d.ListLearnings(ctx, f)
	noErr(t, err)
	out := []string{}
	for _, l := range ls {
		out = append(out, l.LearningID)
	}
	equal(t, "total", n, len(out))
	slices.Sort(out)
	return out
}

var learningTests = map[string]func(t *testing.T, d *db.DB){
	"UpsertLearning_RoundTripsAndKeepsIdentity": func(t *testing.T, d *db.DB) {
		in := db.Learning{LearningID: "l1", LearningType: "entity_memory", Namespace: "user", UserID: "u1", AgentID: "a", TeamID: "t",
			WorkflowID: "w", SessionID: "s", EntityID: "acme", EntityType: "company", Content: json.RawMessage(`{"name":"Acme ✓","facts":["x"]}`),
			Metadata: json.RawMessage(`{"k":1}`), CreatedAt: 100}
		mustLearning(t, d, in)
		got, err := d.GetLearning(bg, "l1")
		noErr(t, err)
		equal(t, "fields", []string{got.LearningType, got.Namespace, got.UserID, got.AgentID, got.TeamID, got.WorkflowID, got.SessionID, got.EntityID, got.EntityType},
			[]string{"entity_memory", "user", "u1", "a", "t", "w", "s", "acme", "company"})
		var c map[string]any
		noErr(t, json.Unmarshal(got.Content, &c))
		equal(t, "content", c["name"], any("Acme ✓"))
		equal(t, "created_at", got.CreatedAt, int64(100))
		out := mustLearning(t, d, db.Learning{LearningID: "l1", LearningType: "entity_memory", UserID: "u1", AgentID: "other", Content: json.RawMessage(`{"name":"Acme 2"}`)})
		equal(t, "identity kept", out.AgentID, "a")
		equal(t, "created_at kept", out.CreatedAt, int64(100))
		if string(out.Content) == string(got.Content) {
			t.Fatal("content not updated")
		}
	},
	"UpsertLearning_RequiresIDTypeAndObjectContent": func(t *testing.T, d *db.DB) {
		for _, l := range []db.Learning{
			{LearningType: "x", Content: json.RawMessage(`{}`)},
			{LearningID: "l", Content: json.RawMessage(`{}`)},
			{LearningID: "l", LearningType: "x", Content: json.RawMessage(`[1]`)},
			{LearningID: "l", LearningType: "x"},
			{LearningID: "l", LearningType: "x", Content: json.RawMessage(`{}`), Metadata: json.RawMessage(`"m"`)},
		} {
			_, err := d.UpsertLearning(bg, &l)
			wantErr(t, err, db.ErrInvalidRecord)
		}
	},
	"Learnings_ScopeSeesOwnAndSharedAndChangesOnlyOwn": func(t *testing.T, d *db.DB) {
		mustLearning(t, d, db.Learning{LearningID: "mine", UserID: "u1", EntityID: "e", EntityType: "person"})
		mustLearning(t, d, db.Learning{LearningID: "theirs", UserID: "u2", EntityID: "e", EntityType: "person"})
		mustLearning(t, d, db.Learning{LearningID: "shared", AgentID: "a", EntityID: "e", EntityType: "person"})
		u1 := db.WithUserScope(bg, "u1")
		equal(t, "u1 sees", learningIDs(t, d, "u1", db.LearningFilter{}), []string{"mine", "shared"})
		equal(t, "u1 filtered by type", learningIDs(t, d, "u1", db.LearningFilter{LearningType: db.EntityLearningType, EntityType: "person"}), []string{"mine", "shared"})
		equal(t, "u1 asking for u2", learningIDs(t, d, "u1", db.LearningFilter{UserID: "u2"}), []string{})
		equal(t, "admin sees", learningIDs(t, d, "", db.LearningFilter{}), []string{"mine", "shared", "theirs"})
		_, err := d.GetLearning(u1, "theirs")
		wantErr(t, err, db.ErrNotFound)
		_, err = d.GetLearning(u1, "shared")
		noErr(t, err)
		for _, id := range []string{"theirs", "shared"} {
			_, err = d.UpsertLearning(u1, &db.Learning{LearningID: id, LearningType: "entity_memory", Content: json.RawMessage(`{"hacked":true}`)})
			wantErr(t, err, db.ErrNotFound)
			wantErr(t, d.DeleteLearning(u1, id), db.ErrNotFound)
		}
		for _, id := range []string{"theirs", "shared"} {
			got, err := d.GetLearning(bg, id)
			noErr(t, err)
			if string(got.Content) != `{"facts":["x"]}` && string(got.Content) != `{"facts": ["x"]}` {
				t.Fatalf("%s changed: %s", id, got.Content)
			}
		}
		noErr(t, d.DeleteLearning(u1, "mine"))
		noErr(t, d.DeleteLearning(bg, "shared"))
		equal(t, "left", learningIDs(t, d, "", db.LearningFilter{}), []string{"theirs"})
	},
	"DeleteUserLearnings_KeepsOthersAndShared": func(t *testing.T, d *db.DB) {
		mustLearning(t, d, db.Learning{LearningID: "a1", UserID: "u1"})
		mustLearning(t, d, db.Learning{LearningID: "a2", UserID: "u1", LearningType: "user_profile"})
		mustLearning(t, d, db.Learning{LearningID: "b1", UserID: "u2"})
		mustLearning(t, d, db.Learning{LearningID: "s1"})
		noErr(t, d.DeleteUserLearnings(bg, "u1", "user_profile"))
		equal(t, "after typed delete", learningIDs(t, d, "", db.LearningFilter{}), []string{"a1", "b1", "s1"})
		wantErr(t, d.DeleteUserLearnings(db.WithUserScope(bg, "u1"), "u2", ""), db.ErrNotFound)
		noErr(t, d.DeleteUserLearnings(db.WithUserScope(bg, "u1"), "u1", ""))
		equal(t, "after delete", learningIDs(t, d, "", db.LearningFilter{}), []string{"b1", "s1"})
	},
	"LearningUsers_PagesOwnersAndScope": func(t *testing.T, d *db.DB) {
		mustLearning(t, d, db.Learning{LearningID: "a1", UserID: "u1", CreatedAt: 10})
		mustLearning(t, d, db.Learning{LearningID: "b1", UserID: "u2", CreatedAt: 20})
		mustLearning(t, d, db.Learning{LearningID: "s1", CreatedAt: 30})
		users, n, err := d.LearningUsers(bg, "", "", 10, 1)
		noErr(t, err)
		equal(t, "count", n, 2)
		ids := []string{users[0].UserID, users[1].UserID}
		slices.Sort(ids)
		equal(t, "users", ids, []string{"u1", "u2"})
		users, n, err = d.LearningUsers(db.WithUserScope(bg, "u1"), "", "", 10, 1)
		noErr(t, err)
		equal(t, "scoped", n, 1)
		equal(t, "scoped user", users[0].UserID, "u1")
		_, _, err = d.LearningUsers(bg, "", "", 0, 1)
		wantErr(t, err, db.ErrInvalidFilter)
	},
}
