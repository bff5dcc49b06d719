package agentos

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/schedule"
)

// staleRead stores an enabled every-minute schedule due at due and returns
// it as a route reads it, before a scheduler writes.
func staleRead(t *testing.T, d *db.DB, name string, due int64) *db.Schedule {
	t.Helper()
	sc, err := d.CreateSchedule(context.Background(), &db.Schedule{ID: "sched-" + name, Name: name, Method: "POST",
		Endpoint: "/agents/echo/runs", Payload: json.RawMessage(`{"message":"tick"}`), CronExpr: "* * * * *", Timezone: "UTC",
		TimeoutSeconds: 3600, RetryDelaySeconds: 60, Enabled: true, NextRunAt: due})
	if err != nil {
		t.Fatal(err)
	}
	read, err := d.GetSchedule(context.Background(), sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	return read
}

// TestEditSchedule_KeepsTheSchedulersConcurrentWrites: a route reads a
// schedule, the scheduler then advances it (a firing) or disables it, and
// the route writes its edit: the scheduler's write stays. Written back
// whole, the stale next_run_at fired the due time again, and the stale
// enabled undid the disable.
func TestEditSchedule_KeepsTheSchedulersConcurrentWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	due := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC).Unix()
	describe := func(sc *db.Schedule) error { sc.Description = "edited"; return nil }
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		t.Run("advance", func(t *testing.T) {
			read := staleRead(t, d, "advanced", due)
			if moved, err := d.AdvanceSchedule(ctx, read.ID, due, due+60); err != nil || !moved {
				t.Fatalf("advance = %v, %v", moved, err)
			}
			out, err := editSchedule(ctx, d, read, describe)
			if err != nil {
				t.Fatal(err)
			}
			if out.NextRunAt != due+60 || out.Description != "edited" {
				t.Fatalf("after the edit next_run_at = %d (description %q), want %d: the fired due time %d is due again",
					out.NextRunAt, out.Description, due+60, due)
			}
			due, err := d.DueSchedules(ctx, due+30, nil, 10)
			if err != nil || len(due) != 0 {
				t.Fatalf("due after the firing and the edit: %+v, %v", due, err)
			}
		})
		t.Run("disable", func(t *testing.T) {
			read := staleRead(t, d, "disabled", due)
			if ok, err := d.DisableSchedule(ctx, read, "endpoint gone"); err != nil || !ok {
				t.Fatalf("disable = %v, %v", ok, err)
			}
			out, err := editSchedule(ctx, d, read, describe)
			if err != nil {
				t.Fatal(err)
			}
			if out.Enabled || out.DisabledReason != "endpoint gone" {
				t.Fatalf("after the edit enabled = %v, disabled_reason %q: the scheduler's disable was undone", out.Enabled, out.DisabledReason)
			}
		})
		t.Run("cron and timezone edited apart", func(t *testing.T) {
			// Two edits of one schedule, each from the same read: the
			// second derives next_run_at from the cron expression it read,
			// which the first changed. It is redone from a fresh read.
			read := staleRead(t, d, "rezoned", due)
			now := time.Unix(due-3600, 0)
			rearm := func(sc *db.Schedule) {
				spec, err := schedule.Parse(sc.CronExpr, sc.Timezone)
				if err != nil {
					t.Fatal(err)
				}
				sc.NextRunAt = spec.Next(now).Unix()
			}
			if _, err := editSchedule(ctx, d, read, func(sc *db.Schedule) error { sc.CronExpr = "0 12 * * *"; rearm(sc); return nil }); err != nil {
				t.Fatal(err)
			}
			out, err := editSchedule(ctx, d, read, func(sc *db.Schedule) error { sc.Timezone = "Asia/Tokyo"; rearm(sc); return nil })
			if err != nil {
				t.Fatal(err)
			}
			// 08:00 UTC is 17:00 in Tokyo: the next noon there is the next day's.
			want := time.Date(2026, 6, 2, 12, 0, 0, 0, time.FixedZone("JST", 9*3600)).Unix()
			if out.CronExpr != "0 12 * * *" || out.Timezone != "Asia/Tokyo" || out.NextRunAt != want {
				t.Fatalf("after both edits cron %q timezone %q next_run_at %d, want 0 12 * * *, Asia/Tokyo, %d",
					out.CronExpr, out.Timezone, out.NextRunAt, want)
			}
		})
	})
}
