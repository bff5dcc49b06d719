package memory

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
)

var bg = context.Background()

func seed(t *testing.T, d *db.DB, ms ...db.Memory) {
	t.Helper()
	for _, m := range ms {
		if _, err := d.UpsertMemory(bg, &m); err != nil {
			t.Fatal(err)
		}
	}
}

func texts(t *testing.T, d *db.DB, user string) []string {
	t.Helper()
	ms, _, err := d.ListMemories(bg, db.MemoryFilter{UserID: user, Limit: 100, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Memory)
	}
	slices.Sort(out)
	return out
}

func userSays(text string) []model.Message {
	return []model.Message{{Role: model.RoleSystem, Content: "sys"}, {Role: model.RoleUser, Content: text}, {Role: model.RoleAssistant, Content: "ok"}}
}

func TestManager_UpdateAppliesTheAnswerToThisUserOnly(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		seed(t, d, db.Memory{MemoryID: "u1-tea", Memory: "likes tea", UserID: "u1"},
			db.Memory{MemoryID: "u1-oslo", Memory: "lives in Oslo", UserID: "u1"},
			db.Memory{MemoryID: "u2-cat", Memory: "has a cat", UserID: "u2"})
		m := &Manager{DB: d, Model: scripted.Reply(`{"updates":[{"op":"add","memory_id":"","memory":"has a dog named Rex","topics":["pets"]},` +
			`{"op":"update","memory_id":"u1-tea","memory":"likes green tea","topics":["drinks"]},{"op":"delete","memory_id":"u1-oslo","memory":"","topics":[]}]}`)}
		res, err := m.Update(bg, Target{UserID: "u1", AgentID: "a1"}, userSays("I moved away from Oslo; I have a dog named Rex and now prefer green tea"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Added != 1 || res.Updated != 1 || res.Deleted != 1 {
			t.Fatalf("result %+v", res)
		}
		if got := texts(t, d, "u1"); !slices.Equal(got, []string{"has a dog named Rex", "likes green tea"}) {
			t.Fatalf("u1 memories = %v", got)
		}
		if got := texts(t, d, "u2"); !slices.Equal(got, []string{"has a cat"}) {
			t.Fatalf("u2 memories changed: %v", got)
		}
		ms, _, _ := d.ListMemories(bg, db.MemoryFilter{UserID: "u1", Topics: []string{"pets"}, Limit: 10, Page: 1})
		// input is what the user said, as Agno stores it, not the prompt
		if len(ms) != 1 || ms[0].AgentID != "a1" || ms[0].Input != "I moved away from Oslo; I have a dog named Rex and now prefer green tea" {
			t.Fatalf("added memory = %+v", ms)
		}
	})
}

func TestManager_AnswerNamingAnotherUsersMemoryAppliesNothing(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		seed(t, d, db.Memory{MemoryID: "u1-tea", Memory: "likes tea", UserID: "u1"},
			db.Memory{MemoryID: "u2-cat", Memory: "has a cat", UserID: "u2"})
		m := &Manager{DB: d, Model: scripted.Reply(`{"updates":[{"op":"add","memory_id":"","memory":"new","topics":[]},{"op":"delete","memory_id":"u2-cat","memory":"","topics":[]}]}`)}
		_, err := m.Update(bg, Target{UserID: "u1"}, userSays("forget the cat"))
		if !errors.Is(err, ErrMalformedUpdates) {
			t.Fatalf("err = %v, want ErrMalformedUpdates", err)
		}
		if got := texts(t, d, "u1"); !slices.Equal(got, []string{"likes tea"}) {
			t.Fatalf("u1 memories = %v", got)
		}
		if got := texts(t, d, "u2"); !slices.Equal(got, []string{"has a cat"}) {
			t.Fatalf("u2 memories = %v", got)
		}
	})
}

func TestManager_MalformedAnswerAppliesNothing(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		seed(t, d, db.Memory{MemoryID: "u1-tea", Memory: "likes tea", UserID: "u1"})
		for _, answer := range []string{
			`{"updates":[{"op":"add","memory_id":"","memory":"first","topics":[]},{"op":"explode"}]}`,
			`{"updates":[{"op":"add","memory_id":"","memory":"first","topics":[]}`,
			`Sure! I'll remember that.`,
		} {
			m := &Manager{DB: d, Model: scripted.Reply(answer)}
			_, err := m.Update(bg, Target{UserID: "u1"}, userSays("remember things"))
			if !errors.Is(err, ErrMalformedUpdates) {
				t.Fatalf("%q: err = %v, want ErrMalformedUpdates", answer, err)
			}
		}
		if got := texts(t, d, "u1"); !slices.Equal(got, []string{"likes tea"}) {
			t.Fatalf("memories = %v", got)
		}
	})
}

func TestManager_NoUserStoresNothing(t *testing.T) {
	d := testdbs.SQLite(t)
	m := &Manager{DB: d, Model: scripted.Reply(`{"updates":[{"op":"add","memory_id":"","memory":"x","topics":[]}]}`)}
	if _, err := m.Update(bg, Target{}, userSays("I like tea")); !errors.Is(err, ErrNoUser) {
		t.Fatalf("err = %v, want ErrNoUser", err)
	}
	if _, err := m.Task(bg, Target{}, "remember tea"); !errors.Is(err, ErrNoUser) {
		t.Fatalf("task err = %v, want ErrNoUser", err)
	}
	if _, n, _ := d.ListMemories(bg, db.MemoryFilter{Limit: 10, Page: 1}); n != 0 {
		t.Fatalf("%d memories stored", n)
	}
}

func TestManager_OptimizeCombinesOrPreviews(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		seed(t, d, db.Memory{MemoryID: "a", Memory: "likes tea", Topics: []string{"drinks"}, UserID: "u1"},
			db.Memory{MemoryID: "b", Memory: "likes green tea in the morning", UserID: "u1"},
			db.Memory{MemoryID: "c", Memory: "has a cat", UserID: "u2"})
		m := &Manager{DB: d, Model: scripted.Reply(`{"summary":"likes green tea, mostly in the morning","topics":["drinks"]}`)}
		prev, err := m.Optimize(bg, Target{UserID: "u1"}, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(prev.Before) != 2 || len(prev.After) != 1 || prev.TokensAfter >= prev.TokensBefore {
			t.Fatalf("preview %+v", prev)
		}
		if got := texts(t, d, "u1"); len(got) != 2 {
			t.Fatalf("preview changed memories: %v", got)
		}
		if _, err := m.Optimize(bg, Target{UserID: "u1"}, true); err != nil {
			t.Fatal(err)
		}
		if got := texts(t, d, "u1"); !slices.Equal(got, []string{"likes green tea, mostly in the morning"}) {
			t.Fatalf("u1 after = %v", got)
		}
		if got := texts(t, d, "u2"); !slices.Equal(got, []string{"has a cat"}) {
			t.Fatalf("u2 after = %v", got)
		}
		if _, err := m.Optimize(bg, Target{UserID: "nobody"}, true); !errors.Is(err, ErrNoMemories) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestManager_ConcurrentUpdatesAllLand: concurrent updates of one user's
// memories (each run's manager adding one) all land, each batch whole.
func TestManager_ConcurrentUpdatesAllLand(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		const n = 8
		m := &Manager{DB: d, Model: scripted.Reply(`{"updates":[{"op":"add","memory_id":"","memory":"a","topics":[]},{"op":"add","memory_id":"","memory":"b","topics":[]}]}`)}
		errs := make(chan error, n)
		for range n {
			go func() {
				_, err := m.Update(bg, Target{UserID: "u1"}, userSays("remember a and b"))
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		if got := texts(t, d, "u1"); len(got) != 2*n {
			t.Fatalf("%d memories, want %d", len(got), 2*n)
		}
	})
}

// Postgres stores no NUL in text or jsonb. A NUL in the model's memory or
// topics is a malformed answer on every backend (not a database error on
// one and a stored memory on the others); a NUL in the user's words or the
// agent's task is left out of what the manager sends and stores.
func TestManager_NULIsRefusedInAnswersAndLeftOutOfInput(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		for _, answer := range []string{
			`{"updates":[{"op":"add","memory_id":"","memory":"likes\u0000tea","topics":[]}]}`,
			`{"updates":[{"op":"add","memory_id":"","memory":"likes tea","topics":["drinks\u0000"]}]}`,
		} {
			m := &Manager{DB: d, Model: scripted.Reply(answer)}
			if _, err := m.Update(bg, Target{UserID: "u1"}, userSays("I like tea")); !errors.Is(err, ErrMalformedUpdates) {
				t.Fatalf("%s: err = %v, want ErrMalformedUpdates", answer, err)
			}
		}
		if got := texts(t, d, "u1"); len(got) != 0 {
			t.Fatalf("memories stored: %q", got)
		}
		m := &Manager{DB: d, Model: scripted.Reply(`{"updates":[{"op":"add","memory_id":"","memory":"likes tea","topics":[]}]}`)}
		if res, err := m.Update(bg, Target{UserID: "u1"}, userSays("I like\x00 tea")); err != nil || res.Added != 1 {
			t.Fatalf("update: %+v, %v", res, err)
		}
		if res, err := m.Task(bg, Target{UserID: "u1"}, "remember\x00 tea"); err != nil || res.Added != 1 {
			t.Fatalf("task: %+v, %v", res, err)
		}
		ms, err := Memories(bg, d, "u1", 0)
		if err != nil || len(ms) != 2 {
			t.Fatalf("memories %+v, %v", ms, err)
		}
		for _, x := range ms {
			if x.Input != "I like tea" && x.Input != "remember tea" {
				t.Fatalf("stored input %q", x.Input)
			}
		}
	})
}

// gated answers reply once release is closed, after telling asked that
// the manager has read the memories and is waiting for the model.
type gated struct {
	model.Model
	asked, release chan struct{}
}

func (g *gated) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	close(g.asked)
	<-g.release
	return g.Model.Invoke(ctx, req)
}

// Two runs of one user change memories at once: one deletes a memory the
// other's answer also deletes or updates, after the other read it. The
// deletion stands, and the rest of the other answer (a new memory) is
// not lost with it.
func TestManager_AMemoryDeletedMeanwhileDoesNotLoseTheRestOfAnAnswer(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		for _, op := range []string{
			`{"op":"delete","memory_id":"x","memory":"","topics":[]}`,
			`{"op":"update","memory_id":"x","memory":"likes green tea","topics":[]}`,
		} {
			seed(t, d, db.Memory{MemoryID: "x", Memory: "likes tea", UserID: "u1"}, db.Memory{MemoryID: "k", Memory: "keeps this", UserID: "u1"})
			g := &gated{Model: scripted.Reply(`{"updates":[{"op":"add","memory_id":"","memory":"has a dog","topics":[]},` + op + `]}`),
				asked: make(chan struct{}), release: make(chan struct{})}
			slow := &Manager{DB: d, Model: g}
			type result struct {
				res *Result
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := slow.Update(bg, Target{UserID: "u1"}, userSays("I have a dog; forget the tea"))
				done <- result{res, err}
			}()
			<-g.asked
			fast := &Manager{DB: d, Model: scripted.Reply(`{"updates":[{"op":"delete","memory_id":"x","memory":"","topics":[]}]}`)}
			if _, err := fast.Update(bg, Target{UserID: "u1"}, userSays("forget the tea")); err != nil {
				t.Fatal(err)
			}
			close(g.release)
			r := <-done
			if r.err != nil {
				t.Fatalf("%s: the slower update failed: %v", op, r.err)
			}
			if r.res.Added != 1 || r.res.Updated+r.res.Deleted != 0 {
				t.Fatalf("%s: result %+v, want 1 added", op, r.res)
			}
			if got := texts(t, d, "u1"); !slices.Equal(got, []string{"has a dog", "keeps this"}) {
				t.Fatalf("%s: memories %q", op, got)
			}
			ms, _ := Memories(bg, d, "u1", 0)
			for _, m := range ms {
				if err := d.DeleteMemories(db.WithUserScope(bg, "u1"), m.MemoryID); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// A memory updated by another run while Optimize waits for its model is
// not deleted under a combined memory written from its old text: the
// optimization is refused and nothing changes.
func TestManager_OptimizeDoesNotLoseAnUpdateMadeMeanwhile(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		seed(t, d, db.Memory{MemoryID: "a", Memory: "likes tea", UserID: "u1"}, db.Memory{MemoryID: "b", Memory: "likes tea a lot", UserID: "u1"})
		g := &gated{Model: scripted.Reply(`{"summary":"likes tea","topics":[]}`), asked: make(chan struct{}), release: make(chan struct{})}
		opt := &Manager{DB: d, Model: g}
		done := make(chan error, 1)
		go func() {
			_, err := opt.Optimize(bg, Target{UserID: "u1"}, true)
			done <- err
		}()
		<-g.asked
		upd := &Manager{DB: d, Model: scripted.Reply(`{"updates":[{"op":"update","memory_id":"a","memory":"likes coffee, no longer tea","topics":[]}]}`)}
		if _, err := upd.Update(bg, Target{UserID: "u1"}, userSays("I drink coffee now")); err != nil {
			t.Fatal(err)
		}
		close(g.release)
		if err := <-done; !errors.Is(err, ErrMemoriesChanged) {
			t.Fatalf("optimize err = %v, want ErrMemoriesChanged", err)
		}
		if got := texts(t, d, "u1"); !slices.Equal(got, []string{"likes coffee, no longer tea", "likes tea a lot"}) {
			t.Fatalf("memories %q", got)
		}
	})
}

// Optimizing keeps the agent and team the memories came from when they all
// name the same one, as Agno's summarize strategy does: a user's memories
// an agent wrote stay that agent's (GET /memories?agent_id=…) after
// POST /optimize-memories, which names no agent. Memories of several
// agents combine into one of none.
func TestManager_OptimizeKeepsTheMemoriesAgent(t *testing.T) {
	d := testdbs.SQLite(t)
	seed(t, d, db.Memory{MemoryID: "a", Memory: "likes tea", UserID: "u1", AgentID: "a1"},
		db.Memory{MemoryID: "b", Memory: "likes green tea", UserID: "u1", AgentID: "a1", TeamID: "t1"},
		db.Memory{MemoryID: "c", Memory: "has a cat", UserID: "u2", AgentID: "a1"},
		db.Memory{MemoryID: "d", Memory: "has a dog", UserID: "u2", AgentID: "a2"})
	m := &Manager{DB: d, Model: scripted.Reply(`{"summary":"combined","topics":[]}`)}
	for user, want := range map[string][2]string{"u1": {"a1", "t1"}, "u2": {"", ""}} {
		out, err := m.Optimize(bg, Target{UserID: user}, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.After[0]; got.AgentID != want[0] || got.TeamID != want[1] {
			t.Errorf("%s: combined memory of agent %q, team %q; want %q, %q", user, got.AgentID, got.TeamID, want[0], want[1])
		}
	}
}
