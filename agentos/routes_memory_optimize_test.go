package agentos

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/memory"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
)

func TestOptimizeMemories_PreviewApplyAndRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{MemoryModel: scripted.Reply(`{"summary":"Alice likes green tea and hiking","topics":["drinks"]}`)})
	seedMemories(t, f.db)
	ctx := context.Background()
	if _, err := f.db.UpsertMemory(ctx, &db.Memory{MemoryID: "m-alice-2", Memory: "Alice hikes on weekends", UserID: "alice"}); err != nil {
		t.Fatal(err)
	}
	count := func(user string) int {
		_, n, err := f.db.ListMemories(ctx, db.MemoryFilter{UserID: user, Limit: 10, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	post := func(body string) response {
		return do(t, "POST", f.url+"/optimize-memories", strings.NewReader(body), jsonHeader)
	}
	res := post(`{"user_id":"alice","apply":false}`)
	if res.status != 200 || !contains(res.body, `"memories_before":2`, `"memories_after":1`, `"Alice likes green tea and hiking"`, `"tokens_saved":`, `"reduction_percentage":`) {
		t.Fatalf("preview = %d %s", res.status, res.body)
	}
	if count("alice") != 2 {
		t.Fatal("the preview changed alice's memories")
	}
	if res = post(`{"user_id":"alice"}`); res.status != 200 {
		t.Fatalf("apply = %d %s", res.status, res.body)
	}
	if count("alice") != 1 || count("bob") != 1 {
		t.Fatalf("after apply: alice %d, bob %d", count("alice"), count("bob"))
	}
	for body, want := range map[string]int{
		`{"user_id":"nobody"}`: 404,
		`{}`:                   400,
		`{"user_id":"bob","model":"scripted:/etc/passwd"}`: 400,
		`{"user_id":"bob","model":"gpt-4o"}`:               400,
		`{"user_id":"bob","apply":"yes"}`:                  422,
		`{"user_id":"bob","extra":1}`:                      422,
	} {
		if res := post(body); res.status != want {
			t.Errorf("%s = %d %s, want %d", body, res.status, res.body, want)
		}
	}
	if count("bob") != 1 {
		t.Fatal("a refused request changed bob's memories")
	}
}

func TestOptimizeMemories_MalformedAnswerChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{MemoryModel: scripted.Reply(`I combined them!`)})
	seedMemories(t, f.db)
	res := do(t, "POST", f.url+"/optimize-memories", strings.NewReader(`{"user_id":"alice"}`), jsonHeader)
	if res.status != 500 || !strings.Contains(res.body, "nothing was changed") {
		t.Fatalf("= %d %s", res.status, res.body)
	}
	if m, err := f.db.GetMemory(context.Background(), "m-alice"); err != nil || m.Memory != "Alice likes green tea" {
		t.Fatalf("m-alice = %+v, %v", m, err)
	}
}

func TestOptimizeMemories_NoModelIs400(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	seedMemories(t, f.db)
	res := do(t, "POST", f.url+"/optimize-memories", strings.NewReader(`{"user_id":"alice"}`), jsonHeader)
	if res.status != 400 || !strings.Contains(res.body, "memory_model") {
		t.Fatalf("= %d %s", res.status, res.body)
	}
}

// changingModel is a memory model during whose answer another writer
// updates a memory of the user being optimized.
type changingModel struct {
	model.Model
	change func()
}

func (m changingModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.change()
	return m.Model.Invoke(ctx, req)
}

// A memory another run updated while the optimize's model worked: nothing
// is changed and the answer is 409 (try again), not a 500.
func TestOptimizeMemories_MemoriesChangedMeanwhileIs409(t *testing.T) {
	t.Parallel()
	var d *db.DB
	f := newFixture(t, Config{MemoryModel: changingModel{Model: scripted.Reply(`{"summary":"Alice likes green tea","topics":["drinks"]}`), change: func() {
		if _, err := d.UpsertMemory(context.Background(), &db.Memory{MemoryID: "m-alice", Memory: "Alice likes coffee, no longer tea", UserID: "alice"}); err != nil {
			t.Error(err)
		}
	}}})
	d = f.db
	seedMemories(t, f.db)
	res := do(t, "POST", f.url+"/optimize-memories", strings.NewReader(`{"user_id":"alice"}`), jsonHeader)
	if res.status != 409 {
		t.Fatalf("= %d %s, want 409", res.status, res.body)
	}
	if m, err := f.db.GetMemory(context.Background(), "m-alice"); err != nil || m.Memory != "Alice likes coffee, no longer tea" {
		t.Fatalf("m-alice = %+v, %v", m, err)
	}
}

// A user with more memories than one optimization combines gets 422 naming
// the bound, and keeps every memory.
func TestOptimizeMemories_MoreThanItCombinesIs422(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{MemoryModel: scripted.Reply(`{"summary":"s","topics":[]}`)})
	ch := db.MemoryChanges{UserID: "carol"}
	for i := range memory.MaxOptimizeMemories + 1 {
		ch.Adds = append(ch.Adds, db.Memory{MemoryID: "m" + strconv.Itoa(i), Memory: "f", UserID: "carol"})
	}
	ctx := db.WithUserScope(context.Background(), "carol")
	if err := f.db.ApplyMemoryChanges(ctx, &ch); err != nil {
		t.Fatal(err)
	}
	res := do(t, "POST", f.url+"/optimize-memories", strings.NewReader(`{"user_id":"carol"}`), jsonHeader)
	if res.status != 422 || !strings.Contains(res.detail(t), strconv.Itoa(memory.MaxOptimizeMemories)) {
		t.Fatalf("optimize = %d %s, want 422 naming the bound", res.status, res.body)
	}
	if _, n, err := f.db.ListMemories(ctx, db.MemoryFilter{UserID: "carol", Limit: 1, Page: 1}); err != nil || n != memory.MaxOptimizeMemories+1 {
		t.Fatalf("%d memories, %v; want all kept", n, err)
	}
}
