package agent

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// countingDriver counts the calls the agent makes to storage.
type countingDriver struct {
	db.Driver
	upsertRun, upsertSession, getSession, history atomic.Int32
}

func (c *countingDriver) UpsertRun(ctx context.Context, r *db.Run) (*db.Run, error) {
	c.upsertRun.Add(1)
	return c.Driver.UpsertRun(ctx, r)
}

func (c *countingDriver) UpsertSession(ctx context.Context, s *db.Session) (*db.Session, error) {
	c.upsertSession.Add(1)
	return c.Driver.UpsertSession(ctx, s)
}

func (c *countingDriver) GetSession(ctx context.Context, id string) (*db.Session, error) {
	c.getSession.Add(1)
	return c.Driver.GetSession(ctx, id)
}

func (c *countingDriver) HistoryRuns(ctx context.Context, q db.HistoryQuery) ([]db.Run, error) {
	c.history.Add(1)
	return c.Driver.HistoryRuns(ctx, q)
}

func openSQLite(t testing.TB) *db.DB {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func storedRun(t *testing.T, d *db.DB, runID string) *run.Output {
	t.Helper()
	row, err := d.GetRun(context.Background(), runID)
	if err != nil {
		t.Fatalf("get run %s: %v", runID, err)
	}
	out, err := row.Output()
	if err != nil {
		t.Fatal(err)
	}
	if row.Status != out.Status {
		t.Fatalf("status column %s, run_data %s", row.Status, out.Status)
	}
	return out
}

func TestRun_PersistsOneRunRowAndTheSession(t *testing.T) {
	t.Parallel()
	cd := &countingDriver{Driver: memory.New()}
	store := db.New("mem", cd)
	a := mustAgent(t, Config{Name: "Calc", DB: store, AddHistoryToContext: true, Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "add", Args: map[string]any{"a": 1, "b": 2}}}},
		scripted.Turn{Content: "3"},
	), Tools: []tool.Tool{addTool()}, SessionState: map[string]any{"plan": "free"}})
	out, err := a.Run(context.Background(), run.TextInput("1+2"), WithUserID("u1"), WithSessionState(map[string]any{"city": "Paris"}))
	if err != nil {
		t.Fatal(err)
	}
	if cd.upsertRun.Load() != 1 || cd.upsertSession.Load() != 1 || cd.getSession.Load() != 0 {
		t.Fatalf("writes: %d runs, %d sessions; reads: %d sessions", cd.upsertRun.Load(), cd.upsertSession.Load(), cd.getSession.Load())
	}
	got := storedRun(t, store, out.RunID)
	if got.Content != "3" || got.Status != run.StatusCompleted || len(got.Tools) != 1 || got.AgentID != "calc" || got.UserID != "u1" {
		t.Fatalf("stored %+v", got)
	}
	s, err := store.GetSession(context.Background(), out.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var data db.SessionData
	if err := json.Unmarshal(s.SessionData, &data); err != nil {
		t.Fatal(err)
	}
	if s.SessionType != run.TypeAgent || s.AgentID != "calc" || s.UserID != "u1" || data.SessionState["city"] != "Paris" || data.SessionState["plan"] != "free" {
		t.Fatalf("session %+v data %s", s, s.SessionData)
	}
	// The next run in the session reads the session and the bounded history once each.
	out2, err := a.Run(context.Background(), run.TextInput("again"), WithSessionID(out.SessionID), WithUserID("u1"),
		WithSessionState(map[string]any{"plan": "pro"}))
	if err != nil {
		t.Fatal(err)
	}
	if cd.history.Load() != 1 || cd.upsertRun.Load() != 2 {
		t.Fatalf("history queries %d, run writes %d", cd.history.Load(), cd.upsertRun.Load())
	}
	if out2.SessionState["city"] != "Paris" || out2.SessionState["plan"] != "pro" {
		t.Fatalf("merged state %v", out2.SessionState)
	}
}

func TestRun_HistoryIsBoundedAndSkipsNonContextRuns(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *db.DB{
		"sqlite": openSQLite,
		"memory": func(testing.TB) *db.DB { return db.New("", memory.New()) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := open(t)
			rec := &recorder{Model: scripted.Reply("ok")}
			a := mustAgent(t, Config{Name: "Hist", DB: store, AddHistoryToContext: true, NumHistoryRuns: 2, Model: rec, Instructions: Instructions{"sys"}})
			ctx := context.Background()
			for _, q := range []string{"q1", "q2", "q3", "q4"} {
				if _, err := a.Run(ctx, run.TextInput(q), WithSessionID("s")); err != nil {
					t.Fatal(err)
				}
			}
			// Runs that must never feed the context, stored after the good ones.
			for _, bad := range []struct {
				id, parent string
				status     run.Status
			}{{"r-err", "", run.StatusError}, {"r-paused", "", run.StatusPaused}, {"r-cancel", "", run.StatusCancelled}, {"r-member", "team-run", run.StatusCompleted}} {
				o := &run.Output{RunID: bad.id, AgentID: "hist", SessionID: "s", ParentRunID: bad.parent, Status: bad.status,
					Messages: []model.Message{{Role: model.RoleUser, Content: "bad " + bad.id}}}
				row, err := db.RunFromOutput(o)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := store.UpsertRun(ctx, row); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := a.Run(ctx, run.TextInput("q5"), WithSessionID("s")); err != nil {
				t.Fatal(err)
			}
			reqs := rec.requests()
			last := reqs[len(reqs)-1]
			var users []string
			for _, m := range last {
				if m.Role == model.RoleUser {
					users = append(users, m.Content)
				}
				if m.Role == model.RoleSystem && m.FromHistory {
					t.Fatal("history must not repeat system messages")
				}
			}
			if strings.Join(users, ",") != "q3,q4,q5" {
				t.Fatalf("user messages sent %v, want q3,q4,q5", users)
			}
			if !last[1].FromHistory || last[len(last)-1].FromHistory {
				t.Fatal("history messages must be marked from_history, the new input not")
			}
			// A fresh agent (no cached history) decodes the same history from storage.
			rec2 := &recorder{Model: scripted.Reply("ok")}
			fresh := mustAgent(t, Config{Name: "Hist", DB: store, AddHistoryToContext: true, NumHistoryRuns: 2, Model: rec2})
			if _, err := fresh.Run(ctx, run.TextInput("q6"), WithSessionID("s")); err != nil {
				t.Fatal(err)
			}
			users = users[:0]
			for _, m := range rec2.requests()[0] {
				if m.Role == model.RoleUser {
					users = append(users, m.Content)
				}
			}
			if strings.Join(users, ",") != "q4,q5,q6" {
				t.Fatalf("fresh agent sent %v, want q4,q5,q6", users)
			}
			// The stored run keeps only its own messages.
			rows, _, err := store.GetRuns(ctx, db.RunFilter{SessionID: "s", Limit: 100, Page: 1})
			if err != nil {
				t.Fatal(err)
			}
			lastRow := storedRun(t, store, rows[len(rows)-1].RunID)
			for _, m := range lastRow.Messages {
				if m.FromHistory {
					t.Fatal("stored runs must not duplicate history messages")
				}
			}
		})
	}
}

func TestRun_TerminalStatesArePersisted(t *testing.T) {
	t.Parallel()
	t.Run("error", func(t *testing.T) {
		t.Parallel()
		store := openSQLite(t)
		a := mustAgent(t, Config{DB: store, Model: script(t, scripted.Turn{Content: "half", Error: "upstream broke", ErrorKind: "server"})})
		out, err := a.Run(context.Background(), run.TextInput("x"))
		if !errors.Is(err, model.ErrServer) {
			t.Fatal(err)
		}
		got := storedRun(t, store, out.RunID)
		if got.Status != run.StatusError || !strings.Contains(got.ContentString(), "upstream broke") {
			t.Fatalf("stored %s %v", got.Status, got.Content)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		t.Parallel()
		store := openSQLite(t)
		slow, _ := scripted.New(scripted.Config{Turns: []scripted.Turn{{Content: "never"}}, Latency: 1 << 40})
		a := mustAgent(t, Config{DB: store, Model: slow})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var runID string
		for ev, err := range a.Stream(ctx, run.TextInput("x")) {
			if err != nil {
				t.Fatal(err)
			}
			runID = ev.RunID
			if ev.Event == run.EventModelRequestStarted {
				cancel()
			}
		}
		if got := storedRun(t, store, runID); got.Status != run.StatusCancelled {
			t.Fatalf("stored status %s", got.Status)
		}
	})
	t.Run("stream consumer stopped", func(t *testing.T) {
		t.Parallel()
		store := db.New("", memory.New())
		a := mustAgent(t, Config{DB: store, Model: scripted.Reply("many words here")})
		var runID string
		for ev, err := range a.Stream(context.Background(), run.TextInput("x")) {
			if err != nil {
				t.Fatal(err)
			}
			runID = ev.RunID
			if ev.Event == run.EventRunContent {
				break
			}
		}
		got := storedRun(t, store, runID)
		if got.Status != run.StatusCancelled || !strings.Contains(got.ContentString(), "stopped reading") {
			t.Fatalf("stored %s %v", got.Status, got.Content)
		}
	})
}

func TestContinueRunID_ResumesStoredPausedRun(t *testing.T) {
	t.Parallel()
	store := openSQLite(t)
	confirm := funcTool("deploy", tool.FuncConfig{RequiresConfirmation: true}, func(context.Context) (string, error) { return "deployed", nil })
	a := mustAgent(t, Config{Name: "Ops", DB: store, Tools: []tool.Tool{confirm}, Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "deploy"}}},
		scripted.Turn{Content: "shipped"},
	)})
	ctx := context.Background()
	paused, err := a.Run(ctx, run.TextInput("deploy"))
	if err != nil || paused.Status != run.StatusPaused {
		t.Fatalf("%v %s", err, paused.Status)
	}
	if got := storedRun(t, store, paused.RunID); got.Status != run.StatusPaused || len(got.Requirements) != 1 {
		t.Fatalf("stored paused run %+v", got)
	}
	id := paused.Requirements[0].ID
	var evs []run.Event
	for ev, err := range a.ContinueStreamID(ctx, paused.RunID, WithTools([]run.ToolExecution{{ToolCallID: id, Confirmed: boolp(true)}})) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if done := find(evs, run.EventRunCompleted); done == nil || done.Content != "shipped" {
		t.Fatalf("events %v", names(evs))
	}
	got := storedRun(t, store, paused.RunID)
	if got.Status != run.StatusCompleted || got.Tools[0].Result != "deployed" || len(got.Requirements) != 0 {
		t.Fatalf("stored %+v", got)
	}
	rows, _, err := store.GetRuns(ctx, db.RunFilter{SessionID: paused.SessionID, Limit: 10, Page: 1})
	if err != nil || len(rows) != 1 {
		t.Fatalf("continuing must update the same row: %d rows, %v", len(rows), err)
	}
	if _, err := a.ContinueRunID(ctx, paused.RunID); !errors.Is(err, run.ErrNotContinuable) {
		t.Fatalf("continuing a completed run: %v", err)
	}
	if _, err := a.ContinueRunID(ctx, "missing"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("continuing a missing run: %v", err)
	}
}

func TestRun_StorageFailureIsReported(t *testing.T) {
	t.Parallel()
	drv := memory.New()
	store := db.New("", drv)
	drv.Close()
	a := mustAgent(t, Config{DB: store, Model: scripted.Reply("x")})
	out, err := a.Run(context.Background(), run.TextInput("x"), WithSessionID("s"))
	if !errors.Is(err, ErrStorage) || out != nil {
		t.Fatalf("a session that cannot be read: run %v err %v, want no run and ErrStorage", out, err)
	}
	// A generated session is not read first: the failure shows when the run
	// is stored.
	if _, err := a.Run(context.Background(), run.TextInput("x")); !errors.Is(err, ErrStorage) {
		t.Fatalf("a run in a new session on a closed store: %v, want ErrStorage", err)
	}
}

func TestStream_RunIsStoredBeforeItsTerminalEvent(t *testing.T) {
	t.Parallel()
	store := db.New("", memory.New())
	a := mustAgent(t, Config{DB: store, Model: scripted.Reply("done")})
	for ev, err := range a.Stream(context.Background(), run.TextInput("x")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Event == run.EventRunCompleted {
			if got := storedRun(t, store, ev.RunID); got.Status != run.StatusCompleted {
				t.Fatalf("stored status %s when RunCompleted arrived", got.Status)
			}
			return
		}
	}
	t.Fatal("no RunCompleted")
}

func TestRun_MemberRunsAreStoredButNotHistory(t *testing.T) {
	t.Parallel()
	store := db.New("", memory.New())
	rec := &recorder{Model: scripted.Reply("ok")}
	a := mustAgent(t, Config{Name: "M", DB: store, AddHistoryToContext: true, Model: rec})
	ctx := context.Background()
	if _, err := a.Run(ctx, run.TextInput("plain"), WithSessionID("s")); err != nil {
		t.Fatal(err)
	}
	member, err := a.Run(ctx, run.TextInput("member"), WithSessionID("s"), WithParentRunID("team-run"))
	if err != nil {
		t.Fatal(err)
	}
	if got := storedRun(t, store, member.RunID); got.ParentRunID != "team-run" {
		t.Fatalf("parent %q", got.ParentRunID)
	}
	if _, err := a.Run(ctx, run.TextInput("next"), WithSessionID("s")); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	var users []string
	for _, m := range reqs[len(reqs)-1] {
		if m.Role == model.RoleUser {
			users = append(users, m.Content)
		}
	}
	if strings.Join(users, ",") != "plain,next" {
		t.Fatalf("users %v", users)
	}
}

// persist's context keeps the run's values but not its cancellation, as
// context.WithoutCancel: not done, no error and no cause once the run is
// cancelled, and a context derived from it has its own.
func TestDetachedCtx_IsContextWithoutCancel(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancelCause(context.WithValue(db.WithUserScope(context.Background(), "u1"), key{}, "v"))
	cancel(errors.New("run cancelled"))
	d := &detachedCtx{parent: parent}
	std := context.WithoutCancel(parent)
	for _, c := range []context.Context{std, d} {
		if c.Err() != nil || c.Done() != nil || context.Cause(c) != nil {
			t.Fatalf("%v: err %v, done %v, cause %v", c, c.Err(), c.Done(), context.Cause(c))
		}
		if _, ok := c.Deadline(); ok {
			t.Fatalf("%v has a deadline", c)
		}
		if u, ok := db.UserScope(c); !ok || u != "u1" || c.Value(key{}) != "v" {
			t.Fatalf("%v lost the run's values: %q %v %v", c, u, ok, c.Value(key{}))
		}
		child, stop := context.WithTimeoutCause(c, time.Nanosecond, errors.New("query timeout"))
		<-child.Done()
		if err := context.Cause(child); err == nil || err.Error() != "query timeout" {
			t.Fatalf("%v: child's cause %v", c, err)
		}
		stop()
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = db.UserScope(d) }); n != 0 {
		t.Fatalf("a value lookup allocates %v times", n)
	}
}

// noUsage is a model that answers as its scripted model does but counts no
// tokens: a run of it adds nothing to its session's metrics.
type noUsage struct{ *scripted.Model }

func (m noUsage) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	resp, err := m.Model.Invoke(ctx, req)
	if resp != nil {
		resp.Usage = model.Usage{}
	}
	return resp, err
}

func (m noUsage) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		for c, err := range m.Model.Stream(ctx, req) {
			if c != nil {
				c.Usage = nil
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// A session row created for a run before it starts (a background run's, at
// enqueue) with the agent's ComponentData is left alone by a run that ends
// in the second the row was written and changes nothing else in it (no
// token to add to its metrics); one created without it is written again to
// add it.
func TestRun_SessionCreatedWithComponentDataIsNotRewritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, withData := range []bool{true, false} {
		for attempt := 0; ; attempt++ {
			drv := &countingDriver{Driver: memory.New()}
			store := db.New("", drv)
			m := noUsage{scripted.Reply("ok")}
			a := mustAgent(t, Config{ID: "a1", Name: "A", Model: m, DB: store})
			// The session's metrics already list the model (a run lists the
			// model that answered, tokens or not).
			data, _ := json.Marshal(map[string]any{"session_metrics": map[string]any{
				"details": map[string]any{"model": []map[string]string{{"id": m.Info().ID, "provider": m.Info().Provider}}}}})
			s := &db.Session{SessionID: "s1", UserID: "u1", SessionData: data}
			if withData {
				s.SetComponent(a.Component(), a.ComponentData())
			} else {
				s.SetComponent(a.Component(), nil)
			}
			sec := time.Now().Unix()
			if _, err := store.UpsertSession(ctx, s); err != nil {
				t.Fatal(err)
			}
			drv.upsertSession.Store(0)
			if _, err := a.Run(ctx, run.TextInput("hi"), WithSessionID("s1"), WithUserID("u1")); err != nil {
				t.Fatal(err)
			}
			if time.Now().Unix() != sec {
				// A second began: updated_at changes, so the row is
				// written either way. Try again within one second.
				if attempt == 5 {
					t.Fatal("no attempt ran within one second")
				}
				continue
			}
			want := int32(1)
			if withData {
				want = 0
			}
			if n := drv.upsertSession.Load(); n != want {
				t.Errorf("with component data %v: %d session writes, want %d", withData, n, want)
			}
			break
		}
	}
}
