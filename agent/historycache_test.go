package agent

import (
	"context"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// userContents lists the user messages of a model request.
func userContents(msgs []model.Message) string {
	var users []string
	for _, m := range msgs {
		if m.Role == model.RoleUser {
			users = append(users, m.Content)
		}
	}
	return strings.Join(users, ",")
}

// The history query names the runs the agent holds; SQLite leaves their
// run_data out. A run another writer rewrote (same second, other size) comes
// back with its run_data and replaces the cached messages, and a run whose
// cache entry is gone by the time the rows arrive is read again by id.
func TestHistory_CachedRunsAreNotReadAgainButChangesAre(t *testing.T) {
	t.Parallel()
	store := openSQLite(t)
	rec := &recorder{Model: scripted.Reply("ok")}
	a := mustAgent(t, Config{Name: "Cache", DB: store, AddHistoryToContext: true, NumHistoryRuns: 5, Model: rec})
	ctx := context.Background()
	var first *run.Output
	for _, q := range []string{"q1", "q2"} {
		out, err := a.Run(ctx, run.TextInput(q), WithSessionID("s"))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = out
		}
	}
	known := a.prep().history.known("s", 10)
	if len(known) != 2 {
		t.Fatalf("cache knows %d runs of the session, want 2", len(known))
	}
	rows, err := store.HistoryRuns(ctx, db.HistoryQuery{SessionID: "s", Limit: 5, Cached: known})
	if err != nil || len(rows) != 2 || rows[0].RunData != nil || rows[1].RunData != nil {
		t.Fatalf("cached runs came back with run_data (%d rows, %v)", len(rows), err)
	}

	// Another writer rewrites run 1 within the same second.
	row, err := store.GetRun(ctx, first.RunID)
	if err != nil {
		t.Fatal(err)
	}
	o, err := row.Output()
	if err != nil {
		t.Fatal(err)
	}
	for i := range o.Messages {
		if o.Messages[i].Role == model.RoleUser {
			o.Messages[i].Content = "q1 as edited elsewhere"
		}
	}
	edited, err := db.RunFromOutput(o)
	if err != nil {
		t.Fatal(err)
	}
	edited.UpdatedAt = known[1].UpdatedAt
	if _, err := store.UpsertRun(ctx, edited); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, run.TextInput("q3"), WithSessionID("s")); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	if got := userContents(reqs[len(reqs)-1]); got != "q1 as edited elsewhere,q2,q3" {
		t.Fatalf("history sent %q", got)
	}

	// The entries go between the query and the lookup: read by id.
	p := a.prep()
	p.history.mu.Lock()
	clear(p.history.entries)
	p.history.mu.Unlock()
	refs, err := store.HistoryRefs(ctx, db.HistoryQuery{SessionID: "s", Limit: 5, Cached: known})
	if err != nil {
		t.Fatal(err)
	}
	st := &state{a: a, p: p, ctx: ctx, out: &run.Output{SessionID: "s"}}
	for i := range refs {
		if refs[i].RunID != first.RunID && refs[i].RunData == nil {
			msgs, ok := st.decodeHistory(&refs[i])
			if !ok || len(msgs) == 0 || !msgs[0].FromHistory {
				t.Fatalf("run %s not read again: %v %v", refs[i].RunID, msgs, ok)
			}
		}
	}
}

// A full cache evicts its oldest entries first: the runs a conversation in
// progress stored last stay cached however many other runs came before
// (an arbitrary victim was often one of them, decoded again every turn).
func TestHistoryCache_EvictsOldestFirst(t *testing.T) {
	var c historyCache
	msgs := []model.Message{{Role: model.RoleUser, Content: "hi", FromHistory: true}}
	ref := func(i int) *db.HistoryRef {
		return &db.HistoryRef{RunID: fmt.Sprintf("run-%d", i), UpdatedAt: 1, RunData: []byte("{}")}
	}
	const total = historyCacheSize*2 + historyCacheSize/2
	for i := range total {
		// Sessions of 4 runs each, as a server with many short conversations.
		c.put(fmt.Sprintf("s-%d", i/4), ref(i), msgs)
		if i > 0 {
			// The conversation's previous run is still there.
			if _, ok := c.get(ref(i - 1)); !ok {
				t.Fatalf("after %d puts the run just before was evicted", i+1)
			}
		}
	}
	for i := range total {
		_, ok := c.get(ref(i))
		if want := i >= total-historyCacheSize; ok != want {
			t.Fatalf("run %d cached = %v, want %v (the newest %d kept)", i, ok, want, historyCacheSize)
		}
	}
	if len(c.entries) != historyCacheSize || len(c.bySession) > historyCacheSize {
		t.Fatalf("%d entries and %d sessions, want at most %d", len(c.entries), len(c.bySession), historyCacheSize)
	}
	// The newest sessions are listed for the history query.
	last := (total - 1) / 4
	if k := c.known(fmt.Sprintf("s-%d", last), 10); len(k) != 4-(4*(last+1)-total) {
		t.Fatalf("newest session knows %d runs", len(k))
	}
}

// keeper keeps every request it gets (a model may), to read them after
// the run.
type keeper struct {
	model.Model
	reqs []*model.Request
	seen [][]model.Message // what each request held when it was made
}

func (k *keeper) ReadsHistory() bool { return true }

func (k *keeper) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	cp := *req // the agent reuses its Request value; its History and Messages stay valid
	k.reqs = append(k.reqs, &cp)
	k.seen = append(k.seen, req.Collect())
	return k.Model.Stream(ctx, req)
}

// The model calls of one run share the history's segments; a request a
// model kept still reads what it was sent after later calls of the run and
// later turns.
func TestHistory_KeptRequestsStayUnchanged(t *testing.T) {
	t.Parallel()
	k := &keeper{Model: script(t,
		scripted.Turn{Match: "weather", ToolCalls: []scripted.ToolCall{{Name: "get_weather", Args: map[string]any{"city": "Paris"}}}},
		scripted.Turn{Match: "weather", Content: "sunny"},
		scripted.Turn{Match: "q", Content: "first answer"},
	)}
	a := mustAgent(t, Config{Name: "Keep", Instructions: Instructions{"Be brief."}, DB: db.New("", memory.New()),
		AddHistoryToContext: true, Model: k, Tools: []tool.Tool{weatherTool()}})
	ctx := context.Background()
	for _, q := range []string{"q1", "weather?", "q3"} {
		if _, err := a.Run(ctx, run.TextInput(q), WithSessionID("s")); err != nil {
			t.Fatal(err)
		}
	}
	if len(k.reqs) != 4 {
		t.Fatalf("%d model calls, want 4", len(k.reqs))
	}
	for i, req := range k.reqs {
		if got := req.Collect(); !reflect.DeepEqual(got, k.seen[i]) {
			t.Fatalf("request %d changed after it was sent:\n%+v\nwas\n%+v", i, got, k.seen[i])
		}
	}
	// The tool run's two calls read the same history: system, q1, first answer.
	for _, i := range []int{1, 2} {
		if got := userContents(k.seen[i]); got != "q1,weather?" {
			t.Fatalf("call %d read users %q", i, got)
		}
		if k.seen[i][0].Role != model.RoleSystem || k.seen[i][2].Content != "first answer" {
			t.Fatalf("call %d read %+v", i, k.seen[i][:3])
		}
	}
}
