package schedule_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/schedule"
)

// keyedFirer is idempotent on the firing's key, as the queue's enqueue
// is: it counts the calls and the distinct runs started.
type keyedFirer struct {
	mu    sync.Mutex
	runs  map[string]string // key → run id
	calls int
}

func (f *keyedFirer) Fire(_ context.Context, sc *db.Schedule, fi schedule.Firing) (schedule.Fired, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.runs == nil {
		f.runs = map[string]string{}
	}
	if id, ok := f.runs[fi.Key]; ok {
		return schedule.Fired{RunID: id}, nil
	}
	f.runs[fi.Key] = "run-" + fi.Key
	return schedule.Fired{RunID: f.runs[fi.Key]}, nil
}

// TestTick_TwoReplicasFireEachDueTimeOnce: two schedulers on two handles
// of one database poll at the same moments, concurrently. Every due time
// of the enabled schedule has one schedule run and one run; the disabled
// schedule, due all along, never fires; next_run_at ends at the first due
// time after the last poll. SQLite and Postgres.
func TestTick_TwoReplicasFireEachDueTimeOnce(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, b := testdbs.AllTwins[name](t)
			start := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
			for _, sc := range []*db.Schedule{
				{ID: "on", Name: "on", CronExpr: "*/5 * * * *", Enabled: true},
				{ID: "off", Name: "off", CronExpr: "* * * * *", Enabled: false},
			} {
				sc.Method, sc.Endpoint, sc.Timezone, sc.CreatedAt = "POST", "/agents/a/runs", "UTC", start.Unix()
				sc.NextRunAt = start.Add(5 * time.Minute).Unix()
				if _, err := a.CreateSchedule(ctx, sc); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			now := start
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			f := &keyedFirer{}
			var scheds []*schedule.Scheduler
			for _, d := range []*db.DB{a, b} {
				s, err := schedule.New(d, f, schedule.Config{Clock: clock})
				if err != nil {
					t.Fatal(err)
				}
				scheds = append(scheds, s)
			}
			const polls = 40 // one a minute: due times at :05, :10, … :40
			for range polls {
				mu.Lock()
				now = now.Add(time.Minute)
				mu.Unlock()
				var wg sync.WaitGroup
				for _, s := range scheds {
					wg.Go(func() {
						if err := s.Tick(ctx); err != nil {
							t.Errorf("tick: %v", err)
						}
					})
				}
				wg.Wait()
			}
			rows, total, err := a.ListScheduleRuns(ctx, db.ScheduleRunFilter{Limit: 100, Page: 1})
			if err != nil {
				t.Fatal(err)
			}
			const due = polls / 5
			seen := map[int64]bool{}
			for _, r := range rows {
				if r.ScheduleID != "on" || seen[r.TriggeredAt] || r.TriggeredAt%300 != 0 {
					t.Errorf("unexpected schedule run %+v", r)
				}
				seen[r.TriggeredAt] = true
			}
			if total != due || len(f.runs) != due {
				t.Errorf("%d schedule runs and %d runs (%d calls), want %d of each", total, len(f.runs), f.calls, due)
			}
			sc, err := b.GetSchedule(ctx, "on")
			if err != nil {
				t.Fatal(err)
			}
			if want := start.Add((polls + 5) * time.Minute).Unix(); sc.NextRunAt != want {
				t.Errorf("next_run_at = %d, want %d", sc.NextRunAt, want)
			}
		})
	}
}
