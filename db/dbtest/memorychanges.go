package dbtest

import (
	"slices"
	"testing"

	"github.com/agentryhq/agentry/db"
)

// userMemoryTexts lists a user's memory texts, sorted.
func userMemoryTexts(t *testing.T, d *db.DB, user string) []string {
	t.Helper()
	ms, _, err := d.ListMemories(bg, db.MemoryFilter{UserID: user, Limit: 100, Page: 1})
	noErr(t, err)
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Memory)
	}
	slices.Sort(out)
	return out
}

var memoryChangeTests = map[string]func(t *testing.T, d *db.DB){
	"ApplyMemoryChanges_AddsUpdatesDeletes": func(t *testing.T, d *db.DB) {
		mustMemory(t, bg, d, db.Memory{MemoryID: "m1", Memory: "likes tea", UserID: "u1", CreatedAt: 5})
		mustMemory(t, bg, d, db.Memory{MemoryID: "m2", Memory: "lives in Oslo", UserID: "u1"})
		noErr(t, d.ApplyMemoryChanges(bg, &db.MemoryChanges{UserID: "u1",
			Adds:    []db.Memory{{MemoryID: "m3", Memory: "has a dog", Topics: []string{"pets"}, AgentID: "a"}},
			Updates: []db.Memory{{MemoryID: "m1", Memory: "likes green tea", Topics: []string{"drinks"}}},
			Deletes: []string{"m2"},
		}))
		equal(t, "texts", userMemoryTexts(t, d, "u1"), []string{"has a dog", "likes green tea"})
		m1, err := d.GetMemory(bg, "m1")
		noErr(t, err)
		equal(t, "topics", m1.Topics, []string{"drinks"})
		equal(t, "created_at kept", m1.CreatedAt, int64(5))
		m3, err := d.GetMemory(bg, "m3")
		noErr(t, err)
		equal(t, "owner", []string{m3.UserID, m3.AgentID}, []string{"u1", "a"})
	},
	"ApplyMemoryChanges_AnotherUsersMemoryFailsTheWholeBatch": func(t *testing.T, d *db.DB) {
		mustMemory(t, bg, d, db.Memory{MemoryID: "mine", Memory: "mine", UserID: "u1"})
		mustMemory(t, bg, d, db.Memory{MemoryID: "theirs", Memory: "theirs", UserID: "u2"})
		for name, ch := range map[string]db.MemoryChanges{
			"update": {UserID: "u1", Adds: []db.Memory{{MemoryID: "new", Memory: "new"}}, Updates: []db.Memory{{MemoryID: "theirs", Memory: "x"}}},
			"delete": {UserID: "u1", Updates: []db.Memory{{MemoryID: "mine", Memory: "changed"}}, Deletes: []string{"theirs"}},
			"absent": {UserID: "u1", Adds: []db.Memory{{MemoryID: "new", Memory: "new"}}, Deletes: []string{"nope"}},
		} {
			err := d.ApplyMemoryChanges(bg, &ch)
			if err == nil {
				t.Fatalf("%s: applied a batch touching another user's or no memory", name)
			}
			wantErr(t, err, db.ErrNotFound)
		}
		equal(t, "u1 unchanged", userMemoryTexts(t, d, "u1"), []string{"mine"})
		equal(t, "u2 unchanged", userMemoryTexts(t, d, "u2"), []string{"theirs"})
	},
	"ApplyMemoryChanges_ExistingAddFailsTheWholeBatch": func(t *testing.T, d *db.DB) {
		mustMemory(t, bg, d, db.Memory{MemoryID: "m1", Memory: "one", UserID: "u1"})
		err := d.ApplyMemoryChanges(bg, &db.MemoryChanges{UserID: "u1", Adds: []db.Memory{{MemoryID: "m2", Memory: "two"}, {MemoryID: "m1", Memory: "again"}}})
		wantErr(t, err, db.ErrInvalidRecord)
		equal(t, "unchanged", userMemoryTexts(t, d, "u1"), []string{"one"})
	},
	"ApplyMemoryChanges_RequiresUserAndValidRecords": func(t *testing.T, d *db.DB) {
		wantErr(t, d.ApplyMemoryChanges(bg, &db.MemoryChanges{Adds: []db.Memory{{MemoryID: "m", Memory: "x"}}}), db.ErrInvalidRecord)
		wantErr(t, d.ApplyMemoryChanges(bg, &db.MemoryChanges{UserID: "u", Adds: []db.Memory{{MemoryID: "m"}}}), db.ErrInvalidRecord)
		wantErr(t, d.ApplyMemoryChanges(bg, &db.MemoryChanges{UserID: "u", Adds: []db.Memory{{MemoryID: "m", Memory: "x"}}, Deletes: []string{"m"}}), db.ErrInvalidRecord)
		wantErr(t, d.ApplyMemoryChanges(db.WithUserScope(bg, "other"), &db.MemoryChanges{UserID: "u", Adds: []db.Memory{{MemoryID: "m", Memory: "x"}}}), db.ErrNotFound)
		equal(t, "nothing stored", userMemoryTexts(t, d, "u"), []string{})
	},
}
