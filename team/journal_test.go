package team

import (
	"context"
	"errors"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// TestRun_JournalReplaysTheLeadersStepsAndDelegations: a team run given a
// journal records the leader's model calls that lead to tool calls and its
// delegations (a member run is one tool step) and the member's own model call; the same run again with the next attempt asks neither
// the leader's model nor the member again.
func TestRun_JournalReplaysTheLeadersStepsAndDelegations(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	j, err := db.NewJournal(f.db)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := f.team.Run(ctx, run.TextInput("greet me"), agent.WithSessionID("s1"), agent.WithRunID("team-run"), agent.WithJournal(j, 1))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := j.Steps(ctx, "team-run")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, s := range steps {
		if strings.HasPrefix(s.StepKey, "member:") {
			kinds["member "+s.Kind]++
			continue
		}
		kinds[s.Kind]++
	}
	// The leader's last model call (its answer, no tools) is not a step of
	// its own: the run's final save records it (see agent/journal.go).
	if kinds["model"] != 1 || kinds["tool"] != 1 || kinds["member model"] != 1 {
		t.Fatalf("journal steps by kind = %v, want the leader's first model call and 1 tool, the member's 1 model", kinds)
	}
	again, err := f.team.Run(ctx, run.TextInput("greet me"), agent.WithSessionID("s1"), agent.WithRunID("team-run"), agent.WithJournal(j, 2))
	if err != nil {
		t.Fatal(err)
	}
	if again.Content != first.Content || again.Status != run.StatusCompleted {
		t.Errorf("replayed team run: %v %q, first %v %q", again.Status, again.Content, first.Status, first.Content)
	}
	// The second attempt replays the leader's first call and the
	// delegation; only the leader's answer (never journaled: the final save
	// records it, and a queue never re-runs a run whose save committed) is
	// asked again, after the delegation's recorded result.
	reqs := f.leader.requests()
	if n := len(reqs); n != 3 {
		t.Fatalf("leader model asked %d times over both attempts, want 3 (2, then only the answer again)", n)
	}
	if last := reqs[2]; len(last) != len(reqs[1]) {
		t.Errorf("the second attempt's leader call has %d messages, the first attempt's answer call %d: not the same turn",
			len(last), len(reqs[1]))
	}
	if n := len(f.member.requests()); n != 1 {
		t.Errorf("member model asked %d times over both attempts, want 1", n)
	}
}

// posModel counts the requests reaching a scripted model by turn position
// (assistant messages after the last user message).
type posModel struct {
	model.Model
	mu  sync.Mutex
	pos map[int]int
}

func (m *posModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	k := 0
	for _, msg := range req.Backward() {
		if msg.Role == model.RoleUser {
			break
		}
		if msg.Role == model.RoleAssistant {
			k++
		}
	}
	m.mu.Lock()
	m.pos[k]++
	m.mu.Unlock()
	return m.Model.Stream(ctx, req)
}

func (m *posModel) repeated() map[int]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int]int{}
	for k, n := range m.pos {
		if n != 1 {
			out[k] = n
		}
	}
	return out
}

// TestRun_JournalResumesAMemberAfterItsToolCall: a durable team run that
// crashes inside a member run, after the member's first tool call was
// recorded and while its second runs, is resumed (attempt 2, the database
// opened again): the member's run id is the same, its completed model
// calls and its completed tool call are replayed from the journal (neither
// model is asked anything twice, the first tool's side effect happened
// once), the interrupted call runs again with the same idempotency key, and
// the team run completes with the member's answer.
func TestRun_JournalResumesAMemberAfterItsToolCall(t *testing.T) {
	t.Parallel()
	for _, nested := range []bool{false, true} {
		name := "member agent"
		if nested {
			name = "agent of a member team"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			journalCrash(t, nested)
		})
	}
}

// journalCrash is TestRun_JournalResumesAMemberAfterItsToolCall, with the
// clerk a member of the team or, nested, of its member team "desk".
func journalCrash(t *testing.T, nested bool) {
	path := filepath.Join(t.TempDir(), "agentry.db")
	runID := "team-crash" // run ids are unique per process: the subtests run in parallel
	if nested {
		runID = "team-crash-nested"
	}
	first := "clerk"
	if nested {
		first = "desk"
	}
	leader := &posModel{Model: script(call(ToolDelegate, map[string]any{"member_id": first, "task": "take the order"}), answer("the order is placed")), pos: map[int]int{}}
	deskLeader := &posModel{Model: script(call(ToolDelegate, map[string]any{"member_id": "clerk", "task": "the order"}), answer("desk: done")), pos: map[int]int{}}
	member := &posModel{Model: script(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "charge"}}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c2", Name: "ship"}}},
		answer("charged and shipped")), pos: map[int]int{}}
	var charges, ships atomic.Int32
	var crash atomic.Bool
	crash.Store(true)
	crashed := make(chan struct{})
	var keys sync.Map
	tools := []tool.Tool{
		tool.MustFunc(tool.FuncConfig{Name: "charge", Description: "Charges."}, func(context.Context, struct{}) (string, error) {
			charges.Add(1)
			return "charged", nil
		}),
		tool.MustFunc(tool.FuncConfig{Name: "ship", Description: "Ships."}, func(ctx context.Context, _ struct{}) (string, error) {
			if crash.CompareAndSwap(true, false) {
				keys.Store(1, run.IdempotencyKey(ctx))
				close(crashed)
				<-ctx.Done()
				return "", ctx.Err()
			}
			keys.Store(2, run.IdempotencyKey(ctx))
			ships.Add(1)
			return "shipped", nil
		}),
	}
	attempt := func(ctx context.Context, n int) (*run.Output, *db.DB, *db.Journal, error) {
		d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		j, err := db.NewJournal(d)
		if err != nil {
			t.Fatal(err)
		}
		clerk := mustAgent(t, agent.Config{ID: "clerk", Model: member, Tools: tools, DB: d})
		cfg := Config{ID: "shop", Model: leader, Members: []*agent.Agent{clerk}, DB: d}
		if nested {
			desk := mustTeam(t, Config{ID: "desk", Model: deskLeader, Members: []*agent.Agent{clerk}, DB: d})
			cfg.Members, cfg.Teams = nil, []*Team{desk}
		}
		tm := mustTeam(t, cfg)
		out, err := tm.Run(ctx, run.TextInput("order"), agent.WithRunID(runID), agent.WithSessionID("s"), agent.WithJournal(j, n))
		return out, d, j, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-crashed; cancel() }()
	_, d1, _, err := attempt(ctx, 1)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("attempt 1: %v, want cancelled", err)
	}
	d1.Close()
	if charges.Load() != 1 || ships.Load() != 0 {
		t.Fatalf("after the crash: charges %d ships %d", charges.Load(), ships.Load())
	}

	out, d, j, err := attempt(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if out.Status != run.StatusCompleted || out.Content != "the order is placed" {
		t.Fatalf("resumed team run %s %q", out.Status, out.Content)
	}
	if charges.Load() != 1 || ships.Load() != 1 {
		t.Errorf("side effects: charge %d, ship %d; want each once", charges.Load(), ships.Load())
	}
	if r := member.repeated(); len(r) != 0 {
		t.Errorf("member model requests repeated by turn position: %v", r)
	}
	if r := leader.repeated(); len(r) != 0 {
		t.Errorf("leader model requests repeated by turn position: %v", r)
	}
	if r := deskLeader.repeated(); len(r) != 0 {
		t.Errorf("member team leader's model requests repeated by turn position: %v", r)
	}
	k1, _ := keys.Load(1)
	k2, _ := keys.Load(2)
	if k1 == nil || k1 == "" || k1 != k2 {
		t.Errorf("ship's idempotency keys %q and %q, want the same", k1, k2)
	}
	rows := rowsOf(t, d, "s")
	wantRows, wantSteps := 2, 5
	if nested {
		wantRows, wantSteps = 3, 8 // and the desk's 2 model calls and delegation
	}
	if len(rows) != wantRows {
		t.Fatalf("%d rows, want %d (the team run and its member runs)", len(rows), wantRows)
	}
	for id, r := range rows {
		if r.Status != run.StatusCompleted {
			t.Errorf("row %s is %s", id, r.Status)
		}
	}
	steps, err := j.Steps(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	member2 := 0
	for _, s := range steps {
		if strings.HasPrefix(s.StepKey, "member:") {
			member2++
		}
	}
	if member2 != wantSteps {
		t.Errorf("%d member steps journaled under the team run, want %d", member2, wantSteps)
	}
}
