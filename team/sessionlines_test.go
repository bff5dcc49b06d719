package team

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// Two team runs of one session overlap: both leaders read the session, then
// their members (whose tool waits for the other member) run at once. Each
// team run's state key and every run's tokens (leaders' and members') end
// up in the session: the leaders write in turns of the session's line, the
// members leave the session row to them and do not take turns (a member
// waiting for a turn its leader holds would never get it).
func TestRun_OverlappingTeamRunsInOneSessionKeepEachOthersChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openDB(t)
	var arrived sync.WaitGroup
	arrived.Add(2)
	wait := tool.MustFunc(tool.FuncConfig{Name: "wait", Description: "Waits for the other member."}, func(ctx context.Context, _ struct{}) (string, error) {
		arrived.Done()
		done := make(chan struct{})
		go func() { arrived.Wait(); close(done) }()
		select {
		case <-done:
			return "met", nil
		case <-time.After(10 * time.Second):
			return "", context.DeadlineExceeded
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	w := mustAgent(t, agent.Config{ID: "writer", DB: d, Tools: []tool.Tool{wait},
		Model: script(call("wait", nil), answer("written"))})
	tm := mustTeam(t, Config{ID: "crew", Model: leaderScript("writer"), Members: []*agent.Agent{w}, DB: d})
	var wg sync.WaitGroup
	for _, k := range []string{"a", "b"} {
		wg.Go(func() {
			out, err := tm.Run(ctx, run.TextInput("go "+k), agent.WithSessionID("s1"), agent.WithSessionState(map[string]any{k: true}))
			if err != nil || out.Status != run.StatusCompleted {
				t.Errorf("team run %s: %v %+v", k, err, out)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	rows, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: "s1", Limit: 100, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	var want run.SessionMetrics
	for _, row := range rows {
		o, err := row.Output()
		if err != nil {
			t.Fatal(err)
		}
		want.AddRun(o.Metrics)
	}
	if len(rows) != 4 {
		t.Fatalf("%d runs, want two team runs and their two member runs", len(rows))
	}
	s, err := d.GetSession(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		State   map[string]any  `json:"session_state"`
		Metrics json.RawMessage `json:"session_metrics"`
	}
	if err := json.Unmarshal(s.SessionData, &data); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(data.State, map[string]any{"a": true, "b": true}) {
		t.Fatalf("session_state %v", data.State)
	}
	wb, _ := json.Marshal(want)
	if diff := jsontest.Diff(wb, data.Metrics); diff != "" {
		t.Fatalf("session_metrics are not the four runs' sum: %s", diff)
	}
}
