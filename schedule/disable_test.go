package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/schedule"
)

// fixingFirer, firing schedule "a", fixes schedule "b"'s cron expression
// as a user would through the API, between the scheduler's read of the
// due schedules and its turn at "b".
type fixingFirer struct {
	t *testing.T
	d *db.DB
}

func (f fixingFirer) Fire(ctx context.Context, sc *db.Schedule, _ schedule.Firing) (schedule.Fired, error) {
	if sc.ID == "a" {
		b, err := f.d.GetSchedule(ctx, "b")
		if err != nil {
			f.t.Fatal(err)
		}
		fixed := *b
		fixed.CronExpr, fixed.Description = "0 * * * *", "fixed"
		if _, err := f.d.EditSchedule(ctx, b, &fixed); err != nil {
			f.t.Fatal(err)
		}
	}
	return schedule.Fired{RunID: "run-" + sc.ID}, nil
}

// TestTick_DisablingAnInvalidScheduleKeepsAConcurrentFix: the scheduler
// disables a due schedule whose cron expression does not parse only if
// the row still has the expression it read, and changes nothing else.
// Before, it wrote back the whole row it had read: a fix made in the
// meantime was overwritten with the broken expression and the schedule
// disabled. SQLite, Postgres and the memory driver.
func TestTick_DisablingAnInvalidScheduleKeepsAConcurrentFix(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres", "memory"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := testdbs.All[name](t)
			now := time.Date(2026, 12, 5, 12, 7, 30, 0, time.UTC)
			for i, id := range []string{"a", "b", "c"} {
				if _, err := d.CreateSchedule(ctx, &db.Schedule{ID: id, Name: id, Method: "POST", Endpoint: "/agents/a/runs",
					CronExpr: "0 * * * *", Timezone: "UTC", Enabled: true, NextRunAt: now.Add(-time.Hour).Unix() + int64(i), CreatedAt: now.Unix()}); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range []string{"b", "c"} { // written around the API
				sc, err := d.GetSchedule(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				broken := *sc
				broken.CronExpr = "61 * * * *"
				if _, err := d.EditSchedule(ctx, sc, &broken); err != nil {
					t.Fatal(err)
				}
			}
			s, err := schedule.New(d, fixingFirer{t, d}, schedule.Config{Clock: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			_ = s.Tick(ctx) // reports c's expression
			b, err := d.GetSchedule(ctx, "b")
			if err != nil {
				t.Fatal(err)
			}
			if b.CronExpr != "0 * * * *" || b.Description != "fixed" || !b.Enabled || b.DisabledReason != "" {
				t.Errorf("b after the tick: cron %q, description %q, enabled %v, reason %q; want the fix kept, enabled",
					b.CronExpr, b.Description, b.Enabled, b.DisabledReason)
			}
			c, err := d.GetSchedule(ctx, "c")
			if err != nil {
				t.Fatal(err)
			}
			if c.Enabled || c.DisabledReason == "" || c.CronExpr != "61 * * * *" {
				t.Errorf("c after the tick: enabled %v, reason %q, cron %q; want disabled with the reason", c.Enabled, c.DisabledReason, c.CronExpr)
			}
		})
	}
}
