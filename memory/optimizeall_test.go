package memory

import (
	"errors"
	"strconv"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	dbmemory "github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model/scripted"
)

// Optimize combines every memory of the user, as Agno does, not only the
// most recent DefaultMaxMemories a turn shows the model: the older ones
// were left beside the combined memory while the answer said one remained.
func TestManager_OptimizeCombinesMoreThanATurnShows(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		const n = DefaultMaxMemories + 50
		var ch db.MemoryChanges
		ch.UserID = "u1"
		for i := range n {
			ch.Adds = append(ch.Adds, db.Memory{MemoryID: "m" + strconv.Itoa(i), Memory: "fact " + strconv.Itoa(i), UserID: "u1"})
		}
		if err := d.ApplyMemoryChanges(db.WithUserScope(bg, "u1"), &ch); err != nil {
			t.Fatal(err)
		}
		m := &Manager{DB: d, Model: scripted.Reply(`{"summary":"knows many facts","topics":[]}`)}
		out, err := m.Optimize(bg, Target{UserID: "u1"}, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Before) != n || len(out.After) != 1 {
			t.Fatalf("before %d, after %d; want %d and 1", len(out.Before), len(out.After), n)
		}
		left, total, err := d.ListMemories(bg, db.MemoryFilter{UserID: "u1", Limit: 10, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		if total != 1 || left[0].Memory != "knows many facts" {
			t.Fatalf("%d memories left after optimizing (%v), want the combined one", total, left)
		}
	})
}

// More memories than one model request takes are refused, and nothing is
// written.
func TestManager_OptimizeRefusesMoreThanItCombines(t *testing.T) {
	d := db.New("", dbmemory.New())
	ch := db.MemoryChanges{UserID: "u1"}
	for i := range MaxOptimizeMemories + 1 {
		ch.Adds = append(ch.Adds, db.Memory{MemoryID: "m" + strconv.Itoa(i), Memory: "f", UserID: "u1"})
	}
	if err := d.ApplyMemoryChanges(db.WithUserScope(bg, "u1"), &ch); err != nil {
		t.Fatal(err)
	}
	m := &Manager{DB: d, Model: scripted.Reply(`{"summary":"s","topics":[]}`)}
	if _, err := m.Optimize(bg, Target{UserID: "u1"}, true); !errors.Is(err, ErrTooManyMemories) {
		t.Fatalf("err = %v, want ErrTooManyMemories", err)
	}
	if _, total, err := d.ListMemories(bg, db.MemoryFilter{UserID: "u1", Limit: 1, Page: 1}); err != nil || total != MaxOptimizeMemories+1 {
		t.Fatalf("%d memories, %v; want all kept", total, err)
	}
}
