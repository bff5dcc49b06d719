package agent

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/jsontest"
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
		ctx := context.Background()
		b := newBarrier(3)
		a := mustAgent(t, Config{ID: "a1", DB: d, Model: script(t,
			scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "wait"}}},
			scripted.Turn{Content: "done"},
		), Tools: []tool.Tool{funcTool("wait", tool.FuncConfig{}, b.arrive)}})
		first, err := mustAgent(t, Config{ID: "a1", DB: d, Model: scripted.Reply("ready")}).
			Run(ctx, run.TextInput("start"), WithSessionID("s1"), WithSessionState(map[string]any{"seed": true, "kept": 1}))
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{first.RunID}
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		for _, st := range []map[string]any{{"a": 1.0, "seed": "a"}, {"b": 2.0}, {"c": 3.0}} {
			wg.Go(func() {
				out, err := a.Run(ctx, run.TextInput("go"), WithSessionID("s1"), WithSessionState(st))
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
			return
		}
		want := map[string]any{"seed": "a", "kept": 1.0, "a": 1.0, "b": 2.0, "c": 3.0}
		if got := storedSessionState(t, d, "s1"); !reflect.DeepEqual(got, want) {
			t.Fatalf("session_state %v, want %v", got, want)
		}
		if diff := jsontest.Diff(sumOfRuns(t, d, ids...), storedSessionMetrics(t, d, "s1")); diff != "" {
			t.Fatalf("session_metrics are not the four runs' sum: %s", diff)
		}
		lines.mu.Lock()
		_, held := lines.m[lineKey{d: d, id: "s1"}]
		lines.mu.Unlock()
		if held {
			t.Fatal("the session's line outlived its runs")
		}
	})
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
	ctx := context.Background()
	d := testdbs.SQLite(t)
	b := newBarrier(2)
	a := mustAgent(t, Config{ID: "a1", DB: d, Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "wait"}}},
		scripted.Turn{Content: "done"},
	), Tools: []tool.Tool{funcTool("wait", tool.FuncConfig{}, b.arrive)}})
	first, err := mustAgent(t, Config{ID: "a1", DB: d, Model: scripted.Reply("ready")}).
		Run(ctx, run.TextInput("start"), WithSessionID("s1"), WithSessionState(map[string]any{"seed": true}))
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := d.GetSession(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{first.RunID}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for i, st := range []map[string]any{{"a": 1.0}, {"b": 2.0}} {
		wg.Go(func() {
			rctx, opts := ctx, []RunOption{WithSessionID("s1"), WithSessionState(st)}
			if i == 1 {
				rctx = db.WithClaimedSession(ctx, "claimed-run", claimed)
				opts = append(opts, WithRunID("claimed-run"))
			}
			out, err := a.Run(rctx, run.TextInput("go"), opts...)
			if err != nil || out.Status != run.StatusCompleted {
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
		return
	}
	want := map[string]any{"seed": true, "a": 1.0, "b": 2.0}
	if got := storedSessionState(t, d, "s1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("session_state %v, want %v", got, want)
	}
	if diff := jsontest.Diff(sumOfRuns(t, d, ids...), storedSessionMetrics(t, d, "s1")); diff != "" {
		t.Fatalf("session_metrics: %s", diff)
	}
}

func TestMergeState(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                   string
		read, now, over, newer map[string]any
		want                   map[string]any
	}{
		{"the run's new key joins the newer state",
			map[string]any{"x": 1.0}, map[string]any{"x": 1.0, "mine": true}, nil,
			map[string]any{"x": 1.0, "theirs": true}, map[string]any{"x": 1.0, "mine": true, "theirs": true}},
		{"a key the run left as it read keeps the newer value",
			map[string]any{"x": 1.0}, map[string]any{"x": 1}, nil,
			map[string]any{"x": 2.0}, map[string]any{"x": 2.0}},
		{"a key the run changed takes the run's value",
			map[string]any{"x": 1.0}, map[string]any{"x": 5.0}, nil,
			map[string]any{"x": 2.0}, map[string]any{"x": 5.0}},
		{"a key the call set wins even at the value read",
			map[string]any{"x": 1.0}, map[string]any{"x": 1.0}, map[string]any{"x": 1.0},
			map[string]any{"x": 2.0}, map[string]any{"x": 1.0}},
		{"a key the run removed is removed",
			map[string]any{"x": 1.0, "y": 1.0}, map[string]any{"y": 1.0}, nil,
			map[string]any{"x": 2.0, "y": 1.0}, map[string]any{"y": 1.0}},
		{"a nested change counts",
			map[string]any{"m": map[string]any{"k": 1.0}}, map[string]any{"m": map[string]any{"k": 2.0}}, nil,
			map[string]any{"m": map[string]any{"k": 1.0}, "z": 0.0}, map[string]any{"m": map[string]any{"k": 2.0}, "z": 0.0}},
		{"no newer state",
			nil, map[string]any{"x": 1.0}, map[string]any{"x": 1.0},
			nil, map[string]any{"x": 1.0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := mergeState(c.read, c.now, c.over, c.newer)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

// The registry's turns: a run that read before another run's write gets that
// row to rebase on, a run whose read came after it (or that wrote it) does
// not; a run that read before it joined (unknownSeq) gets any row written
// here; a second acquire waits for the first release.
func TestSessionLines_Turns(t *testing.T) {
	t.Parallel()
	var r sessionLines
	k := lineKey{d: &db.DB{}, id: "s"}
	early := r.join(k)
	if base := r.acquire(k, early); base != nil {
		t.Fatalf("first write rebased on %v", base)
	}
	row := &db.Session{SessionID: "s"}
	early2 := r.join(k) // joined before the write lands: reads what is stored
	if seq := r.release(k, row, early, false); seq != 1 {
		t.Fatalf("seq after the first write %d", seq)
	}
	late := r.join(k)
	claimed := unknownSeq
	r.join(k)
	if base := r.acquire(k, early2); base != row {
		t.Fatalf("a run that read before the write rebased on %v", base)
	}
	got := make(chan *db.Session)
	go func() { got <- r.acquire(k, late) }()
	select {
	case b := <-got:
		t.Fatalf("a second acquire did not wait (%v)", b)
	case <-time.After(50 * time.Millisecond):
	}
	if seq := r.release(k, nil, early2, true); seq != 1 {
		t.Fatalf("seq after a rebased run wrote nothing %d", seq)
	}
	if base := <-got; base != nil {
		t.Fatalf("a run that read after the write rebased on %v", base)
	}
	r.release(k, nil, late, false)
	if base := r.acquire(k, claimed); base != row {
		t.Fatalf("a run that read before it joined rebased on %v", base)
	}
	r.release(k, nil, claimed, true)
	for range 4 {
		r.leave(k)
	}
	if len(r.m) != 0 {
		t.Fatalf("lines left %v", r.m)
	}
}
