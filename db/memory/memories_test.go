package memory_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db"
)

func seedMemories(t *testing.T, d *db.DB) {
	t.Helper()
	ctx := context.Background()
	for _, m := range []db.Memory{
		{MemoryID: "m1", Memory: "Likes Green Tea", Topics: []string{"food", "drinks"}, AgentID: "ag", UserID: "alice", CreatedAt: 1, UpdatedAt: 10},
		{MemoryID: "m2", Memory: "Lives in Zürich", Topics: []string{"home"}, UserID: "alice", CreatedAt: 2, UpdatedAt: 20},
		{MemoryID: "m3", Memory: "Plays chess", Topics: []string{"hobby"}, TeamID: "tm", UserID: "bob", CreatedAt: 3, UpdatedAt: 15},
		{MemoryID: "m4", Memory: "Shared fact about tea", Topics: []string{"drinks"}, CreatedAt: 4, UpdatedAt: 5},
	} {
		if _, err := d.Driver().UpsertMemory(ctx, &m); err != nil {
			t.Fatal(err)
		}
	}
}

func TestListMemories_FiltersSortsAndPages(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	seedMemories(t, d)
	tests := []struct {
		name      string
		ctx       context.Context
		f         db.MemoryFilter
		want      string
		wantTotal int
	}{
		{"default updated_at desc", context.Background(), db.MemoryFilter{}, "[m2 m3 m1 m4]", 4},
		{"created_at asc", context.Background(), db.MemoryFilter{SortBy: "created_at", SortOrder: "asc"}, "[m1 m2 m3 m4]", 4},
		{"user", context.Background(), db.MemoryFilter{UserID: "alice"}, "[m2 m1]", 2},
		{"scope", as("bob"), db.MemoryFilter{}, "[m3]", 1},
		{"scope overrides the filter's user", as("bob"), db.MemoryFilter{UserID: "alice"}, "[m3]", 1},
		{"agent", context.Background(), db.MemoryFilter{AgentID: "ag"}, "[m1]", 1},
		{"team", context.Background(), db.MemoryFilter{TeamID: "tm"}, "[m3]", 1},
		{"any of the topics", context.Background(), db.MemoryFilter{Topics: []string{"drinks", "hobby"}}, "[m3 m1 m4]", 3},
		{"search case-insensitive", context.Background(), db.MemoryFilter{SearchContent: "TEA"}, "[m1 m4]", 2},
		{"search unicode", context.Background(), db.MemoryFilter{SearchContent: "zÜrich"}, "[m2]", 1},
		{"page 2", context.Background(), db.MemoryFilter{Limit: 3, Page: 2}, "[m4]", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := tt.f
			if f.Limit == 0 {
				f.Limit, f.Page = 10, 1
			}
			got, total, err := d.ListMemories(tt.ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if s := fmt.Sprint(ids(got, func(m db.Memory) string { return m.MemoryID })); s != tt.want || total != tt.wantTotal {
				t.Errorf("got %s total %d, want %s total %d", s, total, tt.want, tt.wantTotal)
			}
		})
	}
}

func TestMemories_UserScopeAndOwnership(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	seedMemories(t, d)
	alice, bob := as("alice"), as("bob")
	if _, err := d.GetMemory(bob, "m1"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("bob reads alice's memory: %v", err)
	}
	if _, err := d.UpsertMemory(bob, &db.Memory{MemoryID: "m1", Memory: "hijacked"}); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("bob overwrites alice's memory: %v", err)
	}
	if err := d.DeleteMemories(bob, "m1", "m2", "m3"); err != nil {
		t.Fatal(err)
	}
	if m, err := d.GetMemory(alice, "m1"); err != nil || m.Memory != "Likes Green Tea" {
		t.Errorf("alice's memory after bob's attempts: %+v, %v", m, err)
	}
	if _, err := d.GetMemory(context.Background(), "m3"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("bob's own memory not deleted: %v", err)
	}
	m, err := d.UpsertMemory(alice, &db.Memory{MemoryID: "m1", Memory: "Likes black tea", Topics: []string{"drinks"}, CreatedAt: 99})
	if err != nil {
		t.Fatal(err)
	}
	if m.CreatedAt != 1 || m.UserID != "alice" || m.Memory != "Likes black tea" {
		t.Errorf("owner update stored %+v", m)
	}
}

func TestMemoryTopics_DistinctSortedInScope(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	seedMemories(t, d)
	tests := []struct {
		ctx  context.Context
		want string
	}{
		{context.Background(), "[drinks food hobby home]"},
		{as("alice"), "[drinks food home]"},
		{as("nobody"), "[]"},
	}
	for _, tt := range tests {
		got, err := d.MemoryTopics(tt.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != tt.want || got == nil {
			t.Errorf("topics = %v, want %s", got, tt.want)
		}
	}
}

func TestUserMemoryStats_PerUserMostRecentFirst(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	seedMemories(t, d)
	ctx := context.Background()
	got, total, err := d.UserMemoryStats(ctx, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []db.UserMemoryStats{{UserID: "alice", TotalMemories: 2, LastMemoryUpdatedAt: 20}, {UserID: "bob", TotalMemories: 1, LastMemoryUpdatedAt: 15}}
	if fmt.Sprint(got) != fmt.Sprint(want) || total != 2 {
		t.Errorf("stats = %v total %d, want %v total 2", got, total, want)
	}
	if got, total, _ := d.UserMemoryStats(ctx, 1, 2); len(got) != 1 || got[0].UserID != "bob" || total != 2 {
		t.Errorf("page 2 = %v total %d", got, total)
	}
	if got, total, _ := d.UserMemoryStats(as("bob"), 10, 1); len(got) != 1 || got[0].UserID != "bob" || total != 1 {
		t.Errorf("scoped = %v total %d", got, total)
	}
	if _, _, err := d.UserMemoryStats(ctx, 0, 1); !errors.Is(err, db.ErrInvalidFilter) {
		t.Errorf("limit 0: %v", err)
	}
}

func TestMemories_NoAliasing(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	in := &db.Memory{MemoryID: "m", Memory: "x", Topics: []string{"a"}}
	out, err := d.UpsertMemory(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	in.Topics[0], out.Topics[0] = "changed", "changed"
	got, _ := d.GetMemory(ctx, "m")
	got.Topics[0] = "changed"
	if again, _ := d.GetMemory(ctx, "m"); again.Topics[0] != "a" {
		t.Fatalf("stored topics changed: %v", again.Topics)
	}
}
