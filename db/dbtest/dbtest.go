package dbtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// Opener returns a fresh, empty database for one test and registers its
// cleanup (close, drop) with t.Cleanup. It must fail the test (t.Fatal) when
// the backend is unreachable, never skip.
type Opener func(t *testing.T) *db.DB

// Run runs the whole suite; every subtest opens its own database and runs in
// parallel with the others.
func Run(t *testing.T, open Opener) {
	t.Helper()
	groups := []struct {
		name  string
		tests map[string]func(t *testing.T, d *db.DB)
	}{
		{"Sessions", sessionTests},
		{"Runs", runTests},
		{"FirstRuns", firstRunTests},
		{"SaveRun", saveRunTests},
		{"SessionExpect", sessionExpectTests},
		{"Pagination", paginationTests},
		{"History", historyTests},
		{"Scope", scopeTests},
		{"ExactUser", exactUserTests},
		{"Memories", memoryTests},
		{"MemoryChanges", memoryChangeTests},
		{"Learnings", learningTests},
		{"Data", dataTests},
		{"Overlong", overlongTests},
		{"Files", fileTests},
		{"FilesMore", fileTests2},
		{"ToolResults", toolResultTests},
		{"SessionDelete", sessionDeleteTests},
		{"Journal", journalTests},
		{"Evals", evalTests},
		{"Metrics", metricsTests},
		{"Approvals", approvalTests},
		{"Schedules", scheduleTests},
		{"ScheduleNames", scheduleNameTests},
		{"Components", componentTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for name, fn := range g.tests {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					fn(t, open(t))
				})
			}
		})
	}
}

var bg = context.Background()

func mustSession(t *testing.T, ctx context.Context, d *db.DB, s db.Session) *db.Session {
	t.Helper()
	if s.SessionType == "" {
		s.SessionType = run.TypeAgent
	}
	out, err := d.UpsertSession(ctx, &s)
	if err != nil {
		t.Fatalf("UpsertSession(%s): %v", s.SessionID, err)
	}
	return out
}

// NewRun is a completed agent run row of session sessionID with small
// valid run_data.
func NewRun(sessionID, runID string) *db.Run {
	data, _ := json.Marshal(map[string]any{"run_id": runID, "session_id": sessionID, "agent_id": "agent-1", "content": "answer " + runID, "status": "COMPLETED"})
	return &db.Run{RunID: runID, SessionID: sessionID, RunType: run.TypeAgent, AgentID: "agent-1",
		Status: run.StatusCompleted, RunData: data}
}

func mustRun(t *testing.T, ctx context.Context, d *db.DB, r *db.Run) *db.Run {
	t.Helper()
	out, err := d.UpsertRun(ctx, r)
	if err != nil {
		t.Fatalf("UpsertRun(%s): %v", r.RunID, err)
	}
	return out
}

// seedRuns stores n runs r0..r{n-1} in session sid with created_at 1000+i.
func seedRuns(t *testing.T, d *db.DB, sid string, n int) {
	t.Helper()
	mustSession(t, bg, d, db.Session{SessionID: sid})
	for i := range n {
		r := NewRun(sid, fmt.Sprintf("%s-r%d", sid, i))
		r.CreatedAt = int64(1000 + i)
		mustRun(t, bg, d, r)
	}
}

func runIDs(runs []db.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.RunID
	}
	return out
}

func sessionIDs(ss []db.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.SessionID
	}
	return out
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func jsonEqual(t *testing.T, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: stored JSON does not decode: %v (%.200s)", what, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: got %.300s, want %.300s", what, got, want)
	}
}

func equal[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func ids(prefix string, from, to int) []string {
	var out []string
	if from <= to {
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf("%s-r%d", prefix, i))
		}
	} else {
		for i := from; i >= to; i-- {
			out = append(out, fmt.Sprintf("%s-r%d", prefix, i))
		}
	}
	return out
}
