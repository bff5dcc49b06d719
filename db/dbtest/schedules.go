package dbtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
)

func schedule(id, name, user string, created int64) *db.Schedule {
	return &db.Schedule{ID: id, Name: name, Method: "POST", Endpoint: "/agents/echo/runs", Payload: json.RawMessage(`{"message":"hi"}`),
		CronExpr: "*/5 * * * *", Timezone: "UTC", TimeoutSeconds: 3600, RetryDelaySeconds: 60, Enabled: true, NextRunAt: 1000,
		UserID: user, TargetType: "agent", TargetID: "echo", CreatedAt: created}
}

var scheduleTests = map[string]func(t *testing.T, d *db.DB){
	"CreateSchedule_GetReturnsEveryColumn": func(t *testing.T, d *db.DB) {
		in := schedule("sch_1", "nightly", "alice", 100)
		in.Description, in.ManagedBy, in.CreatedByRunID, in.CreatedBySessionID = "d", "studio", "r1", "s1"
		_, err := d.CreateSchedule(bg, in)
		noErr(t, err)
		got, err := d.GetSchedule(bg, "sch_1")
		noErr(t, err)
		equal(t, "row", compactSchedule(*got), compactSchedule(*in))
		if _, err := d.CreateSchedule(bg, schedule("sch_1", "other", "alice", 100)); !errors.Is(err, db.ErrExists) {
			t.Errorf("same id: %v", err)
		}
	},
	"CreateSchedule_NamesAreUniquePerOwner": func(t *testing.T, d *db.DB) {
		for i, c := range []struct {
			id, name, user string
			exists         bool
		}{{"a1", "n", "alice", false}, {"a2", "n", "alice", true}, {"b1", "n", "bob", false}, {"u1", "n", "", false}, {"u2", "n", "", true}} {
			_, err := d.CreateSchedule(bg, schedule(c.id, c.name, c.user, int64(100+i)))
			if errors.Is(err, db.ErrExists) != c.exists {
				t.Errorf("create %s (%s, %q): %v, want exists %v", c.id, c.name, c.user, err, c.exists)
			}
		}
		// A rename onto a taken name of the same owner is refused; onto
		// another owner's name it is not.
		s, err := d.GetSchedule(bg, "a1")
		noErr(t, err)
		_, err = d.CreateSchedule(bg, schedule("a3", "m", "alice", 200))
		noErr(t, err)
		renamed := *s
		renamed.Name = "m"
		if _, err := d.EditSchedule(bg, s, &renamed); !errors.Is(err, db.ErrExists) {
			t.Errorf("rename onto a taken name: %v", err)
		}
		b, err := d.GetSchedule(bg, "b1")
		noErr(t, err)
		renamed = *b
		renamed.Name = "m"
		_, err = d.EditSchedule(bg, b, &renamed)
		noErr(t, err)
	},
	"Schedules_ScopedPerUser": func(t *testing.T, d *db.DB) {
		for i, u := range []string{"alice", "bob", ""} {
			_, err := d.CreateSchedule(bg, schedule("s-"+u, "n", u, int64(100+i)))
			noErr(t, err)
		}
		alice := db.WithUserScope(bg, "alice")
		list, n, err := d.ListSchedules(alice, db.ScheduleFilter{Limit: 10, Page: 1})
		noErr(t, err)
		if n != 1 || len(list) != 1 || list[0].ID != "s-alice" {
			t.Errorf("alice lists %d %+v", n, list)
		}
		for _, id := range []string{"s-bob", "s-"} {
			if _, err := d.GetSchedule(alice, id); !errors.Is(err, db.ErrNotFound) {
				t.Errorf("alice gets %s: %v", id, err)
			}
			if err := d.DeleteSchedule(alice, id); !errors.Is(err, db.ErrNotFound) {
				t.Errorf("alice deletes %s: %v", id, err)
			}
		}
		_, n, err = d.ListSchedules(bg, db.ScheduleFilter{Limit: 10, Page: 1})
		noErr(t, err)
		equal(t, "unscoped count", n, 3)
		off := false
		bob, err := d.GetSchedule(bg, "s-bob")
		noErr(t, err)
		disabled := *bob
		disabled.Enabled = false
		_, err = d.EditSchedule(bg, bob, &disabled)
		noErr(t, err)
		_, n, err = d.ListSchedules(bg, db.ScheduleFilter{Enabled: &off, Limit: 10, Page: 1})
		noErr(t, err)
		equal(t, "disabled count", n, 1)
		if _, err := d.DueSchedules(alice, 5000, nil, 10); !errors.Is(err, db.ErrInvalidFilter) {
			t.Errorf("due schedules in a scope: %v", err)
		}
	},
	"EditSchedule_WritesOnlyTheChangedColumnsOfAnUnchangedSchedule": func(t *testing.T, d *db.DB) {
		for i, u := range []string{"alice", "bob"} {
			_, err := d.CreateSchedule(bg, schedule("e-"+u, "n", u, int64(100+i)))
			noErr(t, err)
		}
		_, err := d.CreateSchedule(bg, schedule("e-alice-2", "taken", "alice", 102))
		noErr(t, err)
		read, err := d.GetSchedule(bg, "e-alice")
		noErr(t, err)
		alice := db.WithUserScope(bg, "alice")
		bob, err := d.GetSchedule(bg, "e-bob")
		noErr(t, err)
		if _, err := d.EditSchedule(alice, bob, bob); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("alice edits bob's schedule: %v", err)
		}
		renamed := *read
		renamed.Name = "taken"
		if _, err := d.EditSchedule(alice, read, &renamed); !errors.Is(err, db.ErrExists) {
			t.Errorf("rename onto a taken name: %v", err)
		}
		other := *read
		other.ID = "e-alice-2"
		if _, err := d.EditSchedule(alice, read, &other); !errors.Is(err, db.ErrInvalidRecord) {
			t.Errorf("edit naming another schedule: %v", err)
		}
		// The scheduler advances the schedule after the read: an edit of
		// every other mutable column keeps its next_run_at.
		moved, err := d.AdvanceSchedule(bg, read.ID, read.NextRunAt, 2000)
		noErr(t, err)
		equal(t, "advanced", moved, true)
		edited := *read
		edited.Name, edited.Description, edited.Payload = "renamed", "about", json.RawMessage(`{"message":"edited"}`)
		edited.Method, edited.Endpoint, edited.TargetType, edited.TargetID = "PUT", "/teams/t/runs", "team", "t"
		edited.CronExpr, edited.Timezone, edited.TimeoutSeconds, edited.MaxRetries, edited.RetryDelaySeconds = "0 * * * *", "Europe/Paris", 60, 3, 5
		edited.Enabled, edited.DisabledReason, edited.UpdatedByRunID, edited.UpdatedBySessionID = false, "paused", "r2", "s2"
		got, err := d.EditSchedule(alice, read, &edited)
		noErr(t, err)
		want := edited
		want.NextRunAt, want.UpdatedAt = 2000, got.UpdatedAt
		equal(t, "edited row", compactSchedule(*got), compactSchedule(want))
		if got.UpdatedAt == 0 {
			t.Error("updated_at not set")
		}
		// read's cron_expr, timezone, method and endpoint are gone: an edit
		// computed from them (a next_run_at of the old cron) is refused.
		stale := *read
		stale.Description, stale.NextRunAt = "stale", 5000
		if _, err := d.EditSchedule(alice, read, &stale); !errors.Is(err, db.ErrScheduleChanged) {
			t.Errorf("edit from a stale read: %v", err)
		}
		if now, _ := d.GetSchedule(bg, read.ID); now.Description != "about" || now.NextRunAt != 2000 {
			t.Errorf("a refused edit wrote: %+v", now)
		}
		// Clearing columns stores NULLs the reads give back as zero values.
		cleared := *got
		cleared.Description, cleared.DisabledReason, cleared.NextRunAt, cleared.Enabled = "", "", 0, true
		out, err := d.EditSchedule(alice, got, &cleared)
		noErr(t, err)
		if out.Description != "" || out.DisabledReason != "" || out.NextRunAt != 0 || !out.Enabled {
			t.Errorf("cleared row = %+v", out)
		}
	},
	"DueSchedules_AndAdvanceIsCompareAndSet": func(t *testing.T, d *db.DB) {
		for i, next := range []int64{300, 100, 900} {
			s := schedule(string(rune('a'+i)), string(rune('a'+i)), "alice", 1)
			s.NextRunAt = next
			_, err := d.CreateSchedule(bg, s)
			noErr(t, err)
		}
		due, err := d.DueSchedules(bg, 500, nil, 10)
		noErr(t, err)
		if len(due) != 2 || due[0].ID != "b" || due[1].ID != "a" {
			t.Fatalf("due = %+v", due)
		}
		due, err = d.DueSchedules(bg, 500, &db.DueCursor{NextRunAt: 100, ID: "b"}, 10)
		noErr(t, err)
		if len(due) != 1 || due[0].ID != "a" {
			t.Fatalf("due after b = %+v", due)
		}
		moved, err := d.AdvanceSchedule(bg, "b", 100, 700)
		noErr(t, err)
		if !moved {
			t.Error("first advance did not move")
		}
		moved, err = d.AdvanceSchedule(bg, "b", 100, 800)
		noErr(t, err)
		if moved {
			t.Error("a second advance from the old time moved")
		}
		got, err := d.GetSchedule(bg, "b")
		noErr(t, err)
		equal(t, "next_run_at", got.NextRunAt, int64(700))
		// 0 is "never due again", as on every other write (NULL), not a
		// due time in 1970.
		moved, err = d.AdvanceSchedule(bg, "b", 700, 0)
		noErr(t, err)
		if !moved {
			t.Error("advance to never did not move")
		}
		due, err = d.DueSchedules(bg, 5000, nil, 10)
		noErr(t, err)
		if len(due) != 2 || due[0].ID != "a" || due[1].ID != "c" {
			t.Errorf("due after b was advanced to never = %+v", due)
		}
	},
	"DueSchedules_LeaveAnotherExecutorsFreshLockToIt": func(t *testing.T, d *db.DB) {
		// Agno's executor claims a due schedule with locked_by/locked_at
		// and moves next_run_at only when its firing is done.
		now := time.Now().Unix()
		s := schedule("held", "held", "alice", 1)
		s.NextRunAt, s.LockedBy, s.LockedAt = 100, "agno-host:1234", now-10
		_, err := d.CreateSchedule(bg, s)
		noErr(t, err)
		due, err := d.DueSchedules(bg, now, nil, 10)
		noErr(t, err)
		if len(due) != 0 {
			t.Errorf("due while another executor holds it = %+v", due)
		}
		moved, err := d.AdvanceSchedule(bg, "held", 100, 700)
		noErr(t, err)
		if moved {
			t.Error("advanced while another executor holds it")
		}
		// Past the grace the lock is stale (Agno's rule): due again.
		due, err = d.DueSchedules(bg, now+db.ScheduleLockGrace, nil, 10)
		noErr(t, err)
		if len(due) != 1 || due[0].ID != "held" {
			t.Errorf("due once the lock is stale = %+v", due)
		}
		s2 := schedule("stale", "stale", "alice", 1)
		s2.NextRunAt, s2.LockedBy, s2.LockedAt = 100, "agno-host:1234", now-db.ScheduleLockGrace-5
		_, err = d.CreateSchedule(bg, s2)
		noErr(t, err)
		moved, err = d.AdvanceSchedule(bg, "stale", 100, 700)
		noErr(t, err)
		if !moved {
			t.Error("a stale lock stopped the advance")
		}
	},
	"DisableSchedule_OnlyWhileUnchangedAndOnlyThat": func(t *testing.T, d *db.DB) {
		s := schedule("x", "x", "alice", 1)
		s.Description, s.NextRunAt = "mine", 300
		_, err := d.CreateSchedule(bg, s)
		noErr(t, err)
		stale := *s
		stale.CronExpr = "0 * * * *" // read before an edit
		ok, err := d.DisableSchedule(bg, &stale, "stale")
		noErr(t, err)
		if ok {
			t.Error("disabled a schedule whose cron_expr changed since it was read")
		}
		ok, err = d.DisableSchedule(bg, s, "invalid_schedule: test")
		noErr(t, err)
		if !ok {
			t.Error("did not disable the schedule as read")
		}
		got, err := d.GetSchedule(bg, "x")
		noErr(t, err)
		if got.Enabled || got.DisabledReason != "invalid_schedule: test" || got.Description != "mine" || got.NextRunAt != 300 ||
			got.CronExpr != s.CronExpr || got.Name != "x" {
			t.Errorf("after disable: %+v", got)
		}
		ok, err = d.DisableSchedule(bg, s, "again")
		noErr(t, err)
		if ok {
			t.Error("disabled a disabled schedule again")
		}
	},
	"DueSchedules_ResumeAfterTheCursorOnTies": func(t *testing.T, d *db.DB) {
		for i, id := range []string{"c", "a", "b", "d"} {
			s := schedule(id, id, "alice", 1)
			s.NextRunAt = []int64{100, 100, 100, 50}[i]
			_, err := d.CreateSchedule(bg, s)
			noErr(t, err)
		}
		var ids []string
		var after *db.DueCursor
		for {
			due, err := d.DueSchedules(bg, 500, after, 1)
			noErr(t, err)
			if len(due) == 0 {
				break
			}
			ids = append(ids, due[0].ID)
			after = &db.DueCursor{NextRunAt: due[0].NextRunAt, ID: due[0].ID}
		}
		equal(t, "due order", strings.Join(ids, ","), "d,a,b,c")
	},
	"ScheduleRuns_CreateOnceListScopedFinishOnce": func(t *testing.T, d *db.DB) {
		for i, u := range []string{"alice", "bob"} {
			_, err := d.CreateSchedule(bg, schedule("s-"+u, "n", u, int64(100+i)))
			noErr(t, err)
		}
		run := &db.ScheduleRun{ID: "sr1", ScheduleID: "s-alice", TriggeredAt: 60, Status: db.ScheduleRunRunning, RunID: "r1", SessionID: "ss1",
			Input: json.RawMessage(`{"message":"hi"}`), UserID: "alice", CreatedAt: 61}
		_, err := d.CreateScheduleRun(bg, run)
		noErr(t, err)
		if _, err := d.CreateScheduleRun(bg, run); !errors.Is(err, db.ErrExists) {
			t.Errorf("second create: %v", err)
		}
		_, err = d.CreateScheduleRun(bg, &db.ScheduleRun{ID: "sr2", ScheduleID: "s-bob", Status: db.ScheduleRunRunning, UserID: "bob", CreatedAt: 62})
		noErr(t, err)
		got, err := d.GetScheduleRun(bg, "sr1")
		noErr(t, err)
		run.Attempt = 1
		equal(t, "row", compactScheduleRun(*got), compactScheduleRun(*run))
		alice := db.WithUserScope(bg, "alice")
		if _, err := d.GetScheduleRun(alice, "sr2"); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("alice gets bob's run: %v", err)
		}
		list, n, err := d.ListScheduleRuns(alice, db.ScheduleRunFilter{Limit: 10, Page: 1})
		noErr(t, err)
		if n != 1 || list[0].ID != "sr1" {
			t.Errorf("alice's runs = %d %+v", n, list)
		}
		ok, err := d.FinishScheduleRun(bg, &db.ScheduleRun{ID: "sr1", Status: db.ScheduleRunSuccess, Output: json.RawMessage(`{"status":"COMPLETED"}`)})
		noErr(t, err)
		if !ok {
			t.Error("finish did not apply")
		}
		ok, err = d.FinishScheduleRun(bg, &db.ScheduleRun{ID: "sr1", Status: db.ScheduleRunFailed})
		noErr(t, err)
		if ok {
			t.Error("a second finish applied")
		}
		got, err = d.GetScheduleRun(bg, "sr1")
		noErr(t, err)
		if got.Status != db.ScheduleRunSuccess || got.CompletedAt == 0 {
			t.Errorf("finished run = %+v", got)
		}
		list, n, err = d.ListScheduleRuns(bg, db.ScheduleRunFilter{Status: db.ScheduleRunRunning, Limit: 10, Page: 1})
		noErr(t, err)
		if n != 1 || list[0].ID != "sr2" {
			t.Errorf("running runs = %d %+v", n, list)
		}
		// A retry's row is written before its run starts: StartScheduleRun
		// names the run once, on a running row without one.
		_, err = d.CreateScheduleRun(bg, &db.ScheduleRun{ID: "sr3", ScheduleID: "s-alice", Attempt: 2, TriggeredAt: 60, Status: db.ScheduleRunRunning,
			UserID: "alice", CreatedAt: 63})
		noErr(t, err)
		if ok, err := d.StartScheduleRun(db.WithUserScope(bg, "bob"), &db.ScheduleRun{ID: "sr3", RunID: "r3"}); err != nil || ok {
			t.Errorf("bob starts alice's schedule run: %v %v", ok, err)
		}
		ok, err = d.StartScheduleRun(bg, &db.ScheduleRun{ID: "sr3", RunID: "r3", SessionID: "ss3", Input: json.RawMessage(`{"message":"again"}`)})
		noErr(t, err)
		if !ok {
			t.Error("start did not apply")
		}
		ok, err = d.StartScheduleRun(bg, &db.ScheduleRun{ID: "sr3", RunID: "r4", SessionID: "ss4"})
		noErr(t, err)
		if ok {
			t.Error("a second start applied")
		}
		got, err = d.GetScheduleRun(bg, "sr3")
		noErr(t, err)
		if got.RunID != "r3" || got.SessionID != "ss3" || got.Attempt != 2 || got.Status != db.ScheduleRunRunning || !strings.Contains(string(got.Input), "again") {
			t.Errorf("started run = %+v", got)
		}
		if ok, err := d.StartScheduleRun(bg, &db.ScheduleRun{ID: "sr1", RunID: "r5"}); err != nil || ok {
			t.Errorf("start of a finished run: %v %v", ok, err)
		}
		if _, err := d.StartScheduleRun(bg, &db.ScheduleRun{ID: "sr3"}); !errors.Is(err, db.ErrInvalidRecord) {
			t.Errorf("start without a run id: %v", err)
		}
		// Deleting a schedule deletes its runs.
		noErr(t, d.DeleteSchedule(bg, "s-alice"))
		if _, err := d.GetScheduleRun(bg, "sr1"); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("run of a deleted schedule: %v", err)
		}
	},
}

func compactRaw(f *json.RawMessage) {
	var b bytes.Buffer
	if len(*f) > 0 && json.Compact(&b, *f) == nil {
		*f = b.Bytes()
	}
}

func compactSchedule(s db.Schedule) db.Schedule {
	compactRaw(&s.Payload)
	return s
}

func compactScheduleRun(r db.ScheduleRun) db.ScheduleRun {
	compactRaw(&r.Input)
	compactRaw(&r.Output)
	compactRaw(&r.Requirements)
	return r
}
