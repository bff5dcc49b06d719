package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// A snapshot is its holder's own at every depth: a later Update of a nested
// value does not change it (it shared the nested maps and slices, so a CEL
// condition or an agent step of one parallel branch read them while another
// branch wrote them).
func TestState_SnapshotIsACopyAtEveryDepth(t *testing.T) {
	s := newState(map[string]any{"cart": map[string]any{"n": 1.0, "items": []any{"a", map[string]any{"q": 1.0}}}})
	snap := s.Snapshot()
	s.Update(func(m map[string]any) {
		cart := m["cart"].(map[string]any)
		cart["n"] = 2.0
		items := cart["items"].([]any)
		items[0] = "b"
		items[1].(map[string]any)["q"] = 2.0
	})
	cart := snap["cart"].(map[string]any)
	items := cart["items"].([]any)
	if cart["n"] != 1.0 || items[0] != "a" || items[1].(map[string]any)["q"] != 1.0 {
		t.Fatalf("the snapshot changed with the state: %v", snap)
	}
	if got := s.Snapshot()["cart"].(map[string]any)["n"]; got != 2.0 {
		t.Fatalf("the state did not change: n = %v", got)
	}
}

// Under -race: readers of snapshots and a writer of nested values through
// Update do not race.
func TestState_SnapshotReadersDoNotRaceNestedUpdates(t *testing.T) {
	s := newState(map[string]any{"cart": map[string]any{"n": 0.0}})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 500 {
			s.Update(func(m map[string]any) { m["cart"].(map[string]any)["n"] = float64(i) })
		}
	})
	wg.Go(func() {
		for range 500 {
			if _, ok := s.Snapshot()["cart"].(map[string]any)["n"].(float64); !ok {
				t.Error("n is not a number")
				return
			}
		}
	})
	wg.Wait()
}

// stateBumper is a step runner that changes the session state it is given
// in place: it adds one to state["cart"]["n"].
type stateBumper struct{ shouter }

func (b stateBumper) Run(ctx context.Context, in run.Input, opts ...agent.RunOption) (*run.Output, error) {
	o := agent.ResolveOptions(opts...)
	cart := o.SessionState["cart"].(map[string]any)
	cart["n"] = cart["n"].(float64) + 1
	out, err := b.shouter.Run(ctx, in, opts...)
	if err == nil {
		out.SessionState = o.SessionState
	}
	return out, err
}

func (b stateBumper) Stream(ctx context.Context, in run.Input, opts ...agent.RunOption) iter.Seq2[run.Event, error] {
	panic("not streamed in this test")
}

// A runner that changes the nested values of its state in place has its
// change kept: the state it got is its own, compared with the state as it
// was given.
func TestStep_RunnerChangingNestedStateInPlaceIsMerged(t *testing.T) {
	t.Parallel()
	bump := stateBumper{shouter{run.Component{Type: run.TypeAgent, ID: "bump"}}}
	wf := mustNew(t, Config{ID: "bumps", Steps: []Step{{Name: "one", Runner: bump}, {Name: "two", Runner: bump}}})
	out, err := wf.Run(context.Background(), run.TextInput("go"),
		agent.WithSessionState(map[string]any{"cart": map[string]any{"n": 0.0}}))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run = %+v, %v", out, err)
	}
	if got := out.SessionState["cart"].(map[string]any)["n"]; got != 2.0 {
		t.Fatalf("cart.n = %v, want 2 (each step added one)", got)
	}
}

// TestStep_ANestedWorkflowsStateReachesTheStreamedRun: the session state a
// workflow step (another workflow) leaves is merged into the run whether
// the run is streamed or not; streamed, it was lost (its WorkflowCompleted
// event carries no session state), and the run's save then overwrote what
// the nested run had stored in the shared session.
func TestStep_ANestedWorkflowsStateReachesTheStreamedRun(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	set := Step{Name: "set", Func: func(_ context.Context, in *StepInput) (FuncResult, error) {
		in.State.Set("nested", "was here")
		return FuncResult{Content: "set"}, nil
	}}
	inner := mustNew(t, Config{ID: "inner", DB: d, Steps: []Step{set}})
	outer := mustNew(t, Config{ID: "outer", DB: d, Steps: []Step{{Runner: inner}, fn("after")}})
	for _, streamed := range []bool{false, true} {
		sid := fmt.Sprintf("s-%v", streamed)
		var out *run.Output
		if streamed {
			var got []string
			for ev, err := range outer.Stream(context.Background(), run.TextInput("in"), agent.WithSessionID(sid)) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(ev.Event)+":"+ev.WorkflowID)
			}
			want := "WorkflowStarted:outer StepStarted:outer WorkflowStarted:inner StepStarted:inner StepCompleted:inner WorkflowCompleted:inner StepCompleted:outer StepStarted:outer StepCompleted:outer WorkflowCompleted:outer"
			if strings.Join(got, " ") != want {
				t.Errorf("events = %s\nwant %s", strings.Join(got, " "), want)
			}
			rows := runsOf(t, d, sid)
			for i := range rows {
				if rows[i].WorkflowID == "outer" {
					o, err := rows[i].Output()
					if err != nil {
						t.Fatal(err)
					}
					out = o
				}
			}
		} else {
			var err error
			if out, err = outer.Run(context.Background(), run.TextInput("in"), agent.WithSessionID(sid)); err != nil {
				t.Fatal(err)
			}
		}
		if out == nil || out.Status != run.StatusCompleted || out.SessionState["nested"] != "was here" {
			t.Errorf("streamed=%v: run = %+v", streamed, out)
		}
		s, err := d.GetSession(context.Background(), sid)
		if err != nil || !strings.Contains(string(s.SessionData), `"nested":"was here"`) {
			t.Errorf("streamed=%v: stored session = %s, %v", streamed, s.SessionData, err)
		}
	}
}

// A session state Python stored with a 64-bit id (beyond float64's 2^53)
// and a magnitude beyond float64's range reaches the steps and is stored
// again as written. Before, the id was rounded, and the out-of-range
// number made the stored state unreadable: the run started from an empty
// state and its save dropped every stored key.
func TestRun_SessionStateKeepsNumbersFloat64CannotHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openDB(t)
	const stored = `{"id":9007199254740993,"huge":1e400,"n":1}`
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeWorkflow, WorkflowID: "wf",
		SessionData: json.RawMessage(`{"session_state":` + stored + `}`)}); err != nil {
		t.Fatal(err)
	}
	var seen any
	wf := mustNew(t, Config{ID: "wf", DB: d, Steps: []Step{{Name: "read", Func: func(_ context.Context, in *StepInput) (FuncResult, error) {
		seen, _ = in.State.Get("id")
		in.State.Set("step", true)
		return FuncResult{Content: "ok"}, nil
	}}}})
	if out, err := wf.Run(ctx, run.TextInput("go"), agent.WithSessionID("s1")); err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run = %+v, %v", out, err)
	}
	if seen != json.Number("9007199254740993") {
		t.Fatalf("the step saw id %#v", seen)
	}
	s, err := d.GetSession(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		State map[string]json.RawMessage `json:"session_state"`
	}
	if err := json.Unmarshal(s.SessionData, &data); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"id": "9007199254740993", "huge": "1e400", "n": "1", "step": "true"} {
		if got := string(data.State[k]); got != want {
			t.Fatalf("stored session_state.%s = %s, want %s (session_data %s)", k, got, want, s.SessionData)
		}
	}
}
