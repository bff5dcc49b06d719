package dbtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db"
)

func mustMemory(t *testing.T, ctx context.Context, d *db.DB, m db.Memory) *db.Memory {
	t.Helper()
	out, err := d.UpsertMemory(ctx, &m)
	if err != nil {
		t.Fatalf("UpsertMemory(%s): %v", m.MemoryID, err)
	}
	return out
}

func memoryIDs(ms []db.Memory) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.MemoryID
	}
	return out
}

var memoryTests = map[string]func(t *testing.T, d *db.DB){
	"UpsertMemory_RoundTripsAndUpdates": func(t *testing.T, d *db.DB) {
		in := db.Memory{MemoryID: "m1", Memory: `prefers "quoted" text ✓`, Topics: []string{"style", "prefs"}, Input: "hi",
			Feedback: "good", AgentID: "a", TeamID: "t", UserID: "u", CreatedAt: 100}
		mustMemory(t, bg, d, in)
		got, err := d.GetMemory(bg, "m1")
		noErr(t, err)
		equal(t, "memory", got.Memory, in.Memory)
		equal(t, "topics", got.Topics, in.Topics)
		equal(t, "fields", []string{got.Input, got.Feedback, got.AgentID, got.TeamID, got.UserID}, []string{"hi", "good", "a", "t", "u"})
		equal(t, "created_at", got.CreatedAt, int64(100))
		out := mustMemory(t, bg, d, db.Memory{MemoryID: "m1", Memory: "changed", UserID: "u"})
		equal(t, "updated memory", out.Memory, "changed")
		equal(t, "created_at kept", out.CreatedAt, int64(100))
		equal(t, "topics cleared", len(out.Topics), 0)
	},
	"GetMemory_MissingIsNotFound": func(t *testing.T, d *db.DB) {
		_, err := d.GetMemory(bg, "nope")
		wantErr(t, err, db.ErrNotFound)
	},
	"UpsertMemory_RequiresIDAndText": func(t *testing.T, d *db.DB) {
		_, err := d.UpsertMemory(bg, &db.Memory{Memory: "x"})
		wantErr(t, err, db.ErrInvalidRecord)
		_, err = d.UpsertMemory(bg, &db.Memory{MemoryID: "x"})
		wantErr(t, err, db.ErrInvalidRecord)
	},
	"ListMemories_FiltersPagesAndSorts": func(t *testing.T, d *db.DB) {
		mustMemory(t, bg, d, db.Memory{MemoryID: "m1", Memory: "Loves Hiking", Topics: []string{"outdoors", "sport"}, UserID: "u1", AgentID: "a", CreatedAt: 1})
		mustMemory(t, bg, d, db.Memory{MemoryID: "m2", Memory: "allergic to nuts", Topics: []string{"health"}, UserID: "u1", CreatedAt: 2})
		mustMemory(t, bg, d, db.Memory{MemoryID: "m3", Memory: "plays chess", Topics: []string{"sport"}, UserID: "u2", TeamID: "t", CreatedAt: 3})
		mustMemory(t, bg, d, db.Memory{MemoryID: "m4", Memory: "100% sure", UserID: "u2", CreatedAt: 4})
		cases := []struct {
			name string
			f    db.MemoryFilter
			want []string
		}{
			{"user", db.MemoryFilter{UserID: "u1"}, []string{"m1", "m2"}},
			{"agent", db.MemoryFilter{AgentID: "a"}, []string{"m1"}},
			{"team", db.MemoryFilter{TeamID: "t"}, []string{"m3"}},
			{"any topic", db.MemoryFilter{Topics: []string{"sport", "health"}}, []string{"m1", "m2", "m3"}},
			{"one topic", db.MemoryFilter{Topics: []string{"outdoors"}}, []string{"m1"}},
			{"search any case", db.MemoryFilter{SearchContent: "hiKING"}, []string{"m1"}},
			{"search literal percent", db.MemoryFilter{SearchContent: "0%"}, []string{"m4"}},
			{"search no match", db.MemoryFilter{SearchContent: "_"}, []string{}},
		}
		for _, c := range cases {
			c.f.Limit, c.f.Page, c.f.SortBy, c.f.SortOrder = 10, 1, "created_at", "asc"
			got, total, err := d.ListMemories(bg, c.f)
			noErr(t, err)
			equal(t, c.name, memoryIDs(got), c.want)
			equal(t, c.name+" total", total, len(c.want))
		}
		got, total, err := d.ListMemories(bg, db.MemoryFilter{Limit: 3, Page: 2, SortBy: "created_at", SortOrder: "desc"})
		noErr(t, err)
		equal(t, "last partial page", memoryIDs(got), []string{"m1"})
		equal(t, "total", total, 4)
		_, _, err = d.ListMemories(bg, db.MemoryFilter{Page: 1})
		wantErr(t, err, db.ErrInvalidFilter)
	},
	"DeleteMemories_IgnoresMissing": func(t *testing.T, d *db.DB) {
		mustMemory(t, bg, d, db.Memory{MemoryID: "m1", Memory: "x"})
		mustMemory(t, bg, d, db.Memory{MemoryID: "m2", Memory: "y"})
		noErr(t, d.DeleteMemories(bg, "m1", "missing"))
		_, err := d.GetMemory(bg, "m1")
		wantErr(t, err, db.ErrNotFound)
		_, err = d.GetMemory(bg, "m2")
		noErr(t, err)
	},
	"MemoryTopics_AreDistinctAndSorted": func(t *testing.T, d *db.DB) {
		mustMemory(t, bg, d, db.Memory{MemoryID: "m1", Memory: "x", Topics: []string{"b", "a"}})
		mustMemory(t, bg, d, db.Memory{MemoryID: "m2", Memory: "y", Topics: []string{"c", "a"}})
		mustMemory(t, bg, d, db.Memory{MemoryID: "m3", Memory: "z"})
		topics, err := d.MemoryTopics(bg)
		noErr(t, err)
		equal(t, "topics", topics, []string{"a", "b", "c"})
	},
	"UserMemoryStats_CountsPerUser": func(t *testing.T, d *db.DB) {
		for i := range 3 {
			mustMemory(t, bg, d, db.Memory{MemoryID: fmt.Sprintf("a%d", i), Memory: "x", UserID: "u1"})
		}
		mustMemory(t, bg, d, db.Memory{MemoryID: "b", Memory: "x", UserID: "u2"})
		mustMemory(t, bg, d, db.Memory{MemoryID: "c", Memory: "x"})
		stats, total, err := d.UserMemoryStats(bg, 10, 1)
		noErr(t, err)
		equal(t, "users", total, 2)
		counts := map[string]int{}
		for _, s := range stats {
			counts[s.UserID] = s.TotalMemories
			if s.LastMemoryUpdatedAt == 0 {
				t.Fatalf("user %s: last_memory_updated_at not set", s.UserID)
			}
		}
		equal(t, "counts", counts, map[string]int{"u1": 3, "u2": 1})
		page, _, err := d.UserMemoryStats(bg, 1, 3)
		noErr(t, err)
		equal(t, "beyond last page", len(page), 0)
		_, _, err = d.UserMemoryStats(bg, 0, 1)
		wantErr(t, err, db.ErrInvalidFilter)
	},
}
