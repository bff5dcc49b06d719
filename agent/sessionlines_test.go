package agent

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/internal/sessionline"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// storedSessionState is the session_state member of the stored session.
func storedSessionState(t *testing.T, d *db.DB, sessionID string) map[string]any {
	t.Helper()
	s, err := d.GetSession(context.Background(), sessionID)
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		State map[string]any `json:"session_state"`
	}
	if err := json.Unmarshal(s.SessionData, &data); err != nil {
		t.Fatalf("session_data %s: %v", s.SessionData, err)
	}
	return data.State
}

// Runs of one session that overlap in this process each read the session
// before the other wrote it. Each run's write used to be its own read plus
// its own changes, so the run that saved last dropped what the other added:
// its session_state keys and its tokens in session_metrics. Every run now
// writes its changes over the last row a run of the session wrote here.
// The barrier holds three runs in a tool call: each reads the session before
// any of them saves, on every driver.
func TestRun_OverlappingRunsInOneSessionKeepEachOthersChanges(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		var calls []func(*Agent) (*run.Output, error)
		for _, st := range []map[string]any{{"a": 1.0, "seed": "a"}, {"b": 2.0}, {"c": 3.0}} {
			calls = append(calls, func(a *Agent) (*run.Output, error) {
				return a.Run(context.Background(), run.TextInput("go"), WithSessionID("s1"), WithSessionState(st))
			})
		}
		overlap(t, d, map[string]any{"seed": true, "kept": 1},
			map[string]any{"seed": "a", "kept": 1.0, "a": 1.0, "b": 2.0, "c": 3.0}, calls...)
		if sessionline.Default().Held(sessionline.Key{DB: d, ID: "s1"}) {
			t.Fatal("the session's line outlived its runs")
		}
	})
}

// Processes sharing a database (two servers, Agno beside Agentry) have no
// line in common: overlapping runs of one session on two handles of one
// database each wrote the row they read plus their own changes, and the
// last save dropped the others' state keys and tokens. Their session
// writes are conditional on the row they read (db.Session.Expect): a
// refused write reads the row again and writes its changes over it.
func TestRun_OverlappingRunsOnTwoHandlesOfOneDatabaseKeepEachOthersChanges(t *testing.T) {
	t.Parallel()
	testdbs.EachTwins(t, func(t *testing.T, a, b *db.DB) {
		var calls []func(*Agent) (*run.Output, error)
		for _, st := range []map[string]any{{"a": 1.0, "seed": "a"}, {"b": 2.0}, {"c": 3.0}, {"d": 4.0}} {
			calls = append(calls, func(a *Agent) (*run.Output, error) {
				return a.Run(context.Background(), run.TextInput("go"), WithSessionID("s1"), WithSessionState(st))
			})
		}
		overlapOn(t, []*db.DB{a, b}, map[string]any{"seed": true, "kept": 1},
			map[string]any{"seed": "a", "kept": 1.0, "a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}, calls...)
	})
}

// overlap stores a first run of session s1 with the state seed, then runs
// calls at once on an agent whose one tool call waits for all of them (each
// reads the session before any saves), and checks that the session's state
// is want and its metrics the sum of every run's.
func overlap(t *testing.T, d *db.DB, seed, want map[string]any, calls ...func(*Agent) (*run.Output, error)) {
	t.Helper()
	overlapOn(t, []*db.DB{d}, seed, want, calls...)
}

// overlapOn is overlap with the i-th call's agent on ds[i%len(ds)]: handles
// on one database, as processes sharing it have.
func overlapOn(t *testing.T, ds []*db.DB, seed, want map[string]any, calls ...func(*Agent) (*run.Output, error)) {
	t.Helper()
	ctx := context.Background()
	d := ds[0]
	b := newBarrier(len(calls))
	var agents []*Agent
	for _, d := range ds {
		agents = append(agents, mustAgent(t, Config{ID: "a1", DB: d, Model: script(t,
			scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "wait"}}},
			scripted.Turn{Content: "done"},
		), Tools: []tool.Tool{funcTool("wait", tool.FuncConfig{}, b.arrive)}}))
	}
	first, err := mustAgent(t, Config{ID: "a1", DB: d, Model: scripted.Reply("ready")}).
		Run(ctx, run.TextInput("start"), WithSessionID("s1"), WithSessionState(seed))
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{first.RunID}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for i, call := range calls {
		wg.Go(func() {
			out, err := call(agents[i%len(agents)])
			if err != nil || out.Status != run.StatusCompleted || out.Content != "done" {
				t.Errorf("run: %v %+v", err, out)
				return
			}
			mu.Lock()
			ids = append(ids, out.RunID)
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if got := storedSessionState(t, d, "s1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("session_state %v, want %v", got, want)
	}
	if diff := jsontest.Diff(sumOfRuns(t, d, ids...), storedSessionMetrics(t, d, "s1")); diff != "" {
		t.Fatalf("session_metrics are not the runs' sum: %s", diff)
	}
}

// A run cancelled before it read its session (a client gone as the run
// starts) still stores itself, CANCELLED, with its session row. It wrote a
// session row of its own over the stored one: the session's state, its
// metrics and its name were lost. It now reads the row when it saves and
// writes its changes over it, on every driver.
func TestRun_CancelledBeforeItsSessionReadKeepsTheSession(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		a := mustAgent(t, Config{ID: "a1", DB: d, Model: scripted.Reply("ready")})
		first, err := a.Run(ctx, run.TextInput("start"), WithSessionID("s1"), WithSessionState(map[string]any{"k": 1.0}))
		if err != nil {
			t.Fatal(err)
		}
		s, err := d.GetSession(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		named := *s
		var data map[string]any
		if err := json.Unmarshal(s.SessionData, &data); err != nil {
			t.Fatal(err)
		}
		data["session_name"] = "kept"
		named.SessionData, _ = json.Marshal(data)
		if _, err := d.UpsertSession(ctx, &named); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		out, err := a.Run(cctx, run.TextInput("again"), WithSessionID("s1"), WithSessionState(map[string]any{"c": true}))
		if out == nil || out.Status != run.StatusCancelled {
			t.Fatalf("run: %v %+v", err, out)
		}
		if got := storedRun(t, d, out.RunID); got.Status != run.StatusCancelled {
			t.Fatalf("stored status %s", got.Status)
		}
		// The run never started: the state it was given is not merged in.
		want := map[string]any{"k": 1.0}
		if got := storedSessionState(t, d, "s1"); !reflect.DeepEqual(got, want) {
			t.Fatalf("session_state %v, want %v", got, want)
		}
		if diff := jsontest.Diff(sumOfRuns(t, d, first.RunID, out.RunID), storedSessionMetrics(t, d, "s1")); diff != "" {
			t.Fatalf("session_metrics: %s", diff)
		}
		s, err = d.GetSession(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(s.SessionData, &data); err != nil || data["session_name"] != "kept" {
			t.Fatalf("session_data %s (%v)", s.SessionData, err)
		}
	})
}

// A durable run reads its session when the queue claims it, before the run
// starts here: a run of the session that wrote in between (still in
// progress) is written over, not dropped, whichever of the two saves first.
func TestRun_ClaimedSessionReadBeforeAnOverlappingWriteKeepsIt(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	overlap(t, d, map[string]any{"seed": true}, map[string]any{"seed": true, "a": 1.0, "b": 2.0},
		func(a *Agent) (*run.Output, error) {
			return a.Run(context.Background(), run.TextInput("go"), WithSessionID("s1"), WithSessionState(map[string]any{"a": 1.0}))
		},
		func(a *Agent) (*run.Output, error) {
			// The claim's read: the session as the first run left it.
			ctx := context.Background()
			claimed, err := d.GetSession(ctx, "s1")
			if err != nil {
				return nil, err
			}
			id := uuid.NewString() // run ids are the process's
			ctx = db.WithClaimedSession(ctx, id, claimed)
			return a.Run(ctx, run.TextInput("go"), WithSessionID("s1"), WithRunID(id), WithSessionState(map[string]any{"b": 2.0}))
		})
}

// The gap the claim's own read leaves: a run of the session that writes and
// ends between the durable queue's claim (which read the session) and the
// claimed run's start. The claimed run used the claim's row, older than
// that write, and wrote it back: the other run's state key and tokens were
// lost. The claim's mark (taken before its read) now tells the run that a
// row was written here since; it reads the session itself.
func TestRun_ClaimedSessionOlderThanAnEndedRunsWriteIsNotUsed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdbs.SQLite(t)
	a := mustAgent(t, Config{ID: "a1", DB: d, Model: scripted.Reply("done")})
	first, err := a.Run(ctx, run.TextInput("start"), WithSessionID("s1"), WithSessionState(map[string]any{"seed": true}))
	if err != nil {
		t.Fatal(err)
	}
	mark := sessionline.Default().Mark() // the claim: its mark, then its read
	claimed, err := d.GetSession(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	between, err := a.Run(ctx, run.TextInput("go"), WithSessionID("s1"), WithSessionState(map[string]any{"a": 1.0}))
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.NewString() // run ids are the process's
	cctx := db.WithClaimedSessionAt(ctx, id, claimed, mark)
	out, err := a.Run(cctx, run.TextInput("go"), WithSessionID("s1"), WithRunID(id), WithSessionState(map[string]any{"b": 2.0}))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("claimed run: %v %+v", err, out)
	}
	want := map[string]any{"seed": true, "a": 1.0, "b": 2.0}
	if got := storedSessionState(t, d, "s1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("session_state %v, want %v", got, want)
	}
	if diff := jsontest.Diff(sumOfRuns(t, d, first.RunID, between.RunID, out.RunID), storedSessionMetrics(t, d, "s1")); diff != "" {
		t.Fatalf("session_metrics: %s", diff)
	}
}
