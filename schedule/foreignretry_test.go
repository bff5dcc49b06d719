package schedule

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// recordingFirer starts a run per call and records the keys it was given.
type recordingFirer struct {
	mu   sync.Mutex
	keys []string
}

func (f *recordingFirer) Fire(_ context.Context, _ *db.Schedule, fi Firing) (Fired, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, fi.Key)
	return Fired{RunID: "run-" + runIDOf(fi.Key)}, nil
}

// TestTick_LeavesAnotherExecutorsRetryToIt: Agno's executor writes every
// attempt's row (attempt 2 and on as well) running without a run before
// it calls the endpoint, and names the run only when its polling ends,
// up to timeout_seconds later. Such a retry row past the retry delay is
// not fired again: it is left running while its executor may be alive
// and failed as abandoned after timeout_seconds plus the 300 s grace, as
// a first attempt is. The scheduler's own waiting retries (their ids
// derived from its keys, a cron firing's and a manual trigger's) are
// fired. Before, every running retry row without a run was fired once
// its delay had passed: a second run of the firing Agno was running.
// SQLite and Postgres.
func TestTick_LeavesAnotherExecutorsRetryToIt(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := testdbs.All[name](t)
			now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
			sc, err := d.CreateSchedule(ctx, &db.Schedule{ID: "s1", Name: "nightly", Method: "POST", Endpoint: "/agents/a/runs",
				Payload: []byte(`{"message":"hi"}`), CronExpr: "0 3 * * *", Timezone: "UTC", Enabled: true, TimeoutSeconds: 600,
				MaxRetries: 3, RetryDelaySeconds: 60, NextRunAt: now.Add(time.Hour).Unix(), CreatedAt: now.Unix()})
			if err != nil {
				t.Fatal(err)
			}
			// Agno's rows, as its executor writes them: a uuid4 id,
			// triggered_at and created_at when the attempt started, run_id
			// NULL.
			st, _ := sqlstore.FromDB(d)
			dl := st.SQLDialect()
			agnoLive, agnoDead := uuid.NewString(), uuid.NewString()
			for id, age := range map[string]int64{agnoDead: 600 + 300, agnoLive: 600 + 299} {
				at := now.Unix() - age
				if _, err := st.SQL().ExecContext(ctx, dl.Bind("INSERT INTO "+dl.Table(st.Tables().ScheduleRuns)+
					" (id, schedule_id, attempt, triggered_at, status, created_at) VALUES (?, ?, 2, ?, 'running', ?)"),
					id, sc.ID, at, at); err != nil {
					t.Fatal(err)
				}
			}
			// The scheduler's own retries, waiting past their delay.
			due := now.Add(-9 * time.Hour)
			cron := &db.ScheduleRun{ID: runIDOf(Key(sc.ID, due)), ScheduleID: sc.ID, Attempt: 1, TriggeredAt: due.Unix()}
			trig := &db.ScheduleRun{ID: runIDOf("agentry-schedule:" + sc.ID + ":trigger:x"), ScheduleID: sc.ID, Attempt: 1, TriggeredAt: due.Unix()}
			var ours []string
			for _, first := range []*db.ScheduleRun{cron, trig} {
				// The attempt each retry follows, failed.
				first.Status, first.RunID, first.CreatedAt, first.CompletedAt = db.ScheduleRunFailed, "run-1-"+first.ID, due.Unix(), now.Unix()-61
				if _, err := d.CreateScheduleRun(ctx, first); err != nil {
					t.Fatal(err)
				}
				next := &db.ScheduleRun{ID: nextRunID(first), ScheduleID: sc.ID, Attempt: 2, TriggeredAt: due.Unix(),
					Status: db.ScheduleRunRunning, CreatedAt: now.Unix() - 61}
				if _, err := d.CreateScheduleRun(ctx, next); err != nil {
					t.Fatal(err)
				}
				ours = append(ours, next.ID)
			}
			f := &recordingFirer{}
			s, err := New(d, f, Config{Clock: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			if len(f.keys) != 2 {
				t.Errorf("fired %d runs (%v), want the scheduler's own two retries", len(f.keys), f.keys)
			}
			for _, id := range ours {
				if r, err := d.GetScheduleRun(ctx, id); err != nil || r.RunID == "" {
					t.Errorf("own retry %s: %+v, %v; want it fired", id, r, err)
				}
			}
			live, err := d.GetScheduleRun(ctx, agnoLive)
			if err != nil {
				t.Fatal(err)
			}
			if live.Status != db.ScheduleRunRunning || live.RunID != "" {
				t.Errorf("Agno's retry within timeout_seconds plus the grace: status %q run %q, want running without a run", live.Status, live.RunID)
			}
			dead, err := d.GetScheduleRun(ctx, agnoDead)
			if err != nil {
				t.Fatal(err)
			}
			if dead.Status != db.ScheduleRunFailed || dead.RunID != "" || !strings.Contains(dead.Error, "abandoned") {
				t.Errorf("Agno's abandoned retry: status %q run %q error %q, want failed as abandoned", dead.Status, dead.RunID, dead.Error)
			}
		})
	}
}

// TestTick_FiresOnlyTheRetriesWhoseIdItDerives: a waiting retry row (running,
// attempt 2 or more, no run) is fired only when its id is the one the
// scheduler derives for it: RetryKey's for a cron firing, nextRunID of the
// stored attempt it follows for a manual trigger. Name-based (UUIDv5) ids
// another tool wrote, in the scheduler's namespace or another, and one
// derived from an attempt that is not stored are another executor's:
// left running within timeout_seconds plus the grace, then failed as
// abandoned, never fired. Before, every UUIDv5 id counted as the
// scheduler's own and was fired once the retry delay had passed. All four
// drivers.
func TestTick_FiresOnlyTheRetriesWhoseIdItDerives(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
		sc, err := d.CreateSchedule(ctx, &db.Schedule{ID: "s1", Name: "nightly", Method: "POST", Endpoint: "/agents/a/runs",
			Payload: []byte(`{"message":"hi"}`), CronExpr: "0 3 * * *", Timezone: "UTC", Enabled: true, TimeoutSeconds: 600,
			MaxRetries: 3, RetryDelaySeconds: 60, NextRunAt: now.Add(time.Hour).Unix(), CreatedAt: now.Unix()})
		if err != nil {
			t.Fatal(err)
		}
		due := now.Add(-9 * time.Hour).Unix()
		// A manual trigger's first attempt, failed, and its retry.
		trig := &db.ScheduleRun{ID: runIDOf("agentry-schedule:" + sc.ID + ":trigger:x"), ScheduleID: sc.ID, Attempt: 1, TriggeredAt: due,
			Status: db.ScheduleRunFailed, RunID: "run-1", CreatedAt: due, CompletedAt: now.Unix() - 61}
		if _, err := d.CreateScheduleRun(ctx, trig); err != nil {
			t.Fatal(err)
		}
		unstored := &db.ScheduleRun{ID: runIDOf("agentry-schedule:" + sc.ID + ":trigger:y"), ScheduleID: sc.ID, Attempt: 1, TriggeredAt: due}
		ours := nextRunID(trig)
		rows := []string{ours,
			uuid.NewSHA1(uuid.NameSpaceURL, []byte("another-tool:"+sc.ID+"#2")).String(),
			uuid.NewSHA1(uuid.NameSpaceDNS, []byte("retry.example.com")).String(),
			nextRunID(unstored),
		}
		for _, id := range rows {
			if _, err := d.CreateScheduleRun(ctx, &db.ScheduleRun{ID: id, ScheduleID: sc.ID, Attempt: 2, TriggeredAt: due,
				Status: db.ScheduleRunRunning, CreatedAt: now.Unix() - 61}); err != nil {
				t.Fatal(err)
			}
		}
		clock := now
		f := &recordingFirer{}
		s, err := New(d, f, Config{Clock: func() time.Time { return clock }})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		if len(f.keys) != 1 {
			t.Errorf("fired %d runs (%v), want the scheduler's own retry only", len(f.keys), f.keys)
		}
		if r, err := d.GetScheduleRun(ctx, ours); err != nil || r.RunID == "" {
			t.Errorf("own retry: %+v, %v; want it fired", r, err)
		}
		for _, id := range rows[1:] {
			if r, err := d.GetScheduleRun(ctx, id); err != nil || r.Status != db.ScheduleRunRunning || r.RunID != "" {
				t.Errorf("foreign retry %s within its timeout: %+v, %v; want it left running without a run", id, r, err)
			}
		}
		// Past timeout_seconds plus the grace they are abandoned.
		clock = now.Add(600*time.Second + abandonGrace)
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		if len(f.keys) != 1 {
			t.Errorf("fired %d runs (%v) after the timeout, want still one", len(f.keys), f.keys)
		}
		for _, id := range rows[1:] {
			if r, err := d.GetScheduleRun(ctx, id); err != nil || r.Status != db.ScheduleRunFailed || r.RunID != "" || !strings.Contains(r.Error, "abandoned") {
				t.Errorf("foreign retry %s after its timeout: %+v, %v; want failed as abandoned", id, r, err)
			}
		}
	})
}
