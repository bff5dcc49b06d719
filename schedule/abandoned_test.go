package schedule_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/schedule"
)

// TestTick_FailsAnAbandonedFirstAttempt: a first attempt left running
// without a run (Agno's executor inserts it before calling the endpoint
// and names the run when it ends; a process that died leaves it so) is
// failed, saying why, once it is older than its schedule's
// timeout_seconds plus the 300 s grace; a younger one (a live executor
// may still be polling its run) is left running. Before, every such row
// stayed running for ever, read again on every poll. SQLite and
// Postgres.
func TestTick_FailsAnAbandonedFirstAttempt(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := testdbs.All[name](t)
			now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
			sc, err := d.CreateSchedule(ctx, &db.Schedule{ID: "s1", Name: "nightly", Method: "POST", Endpoint: "/agents/a/runs",
				CronExpr: "0 3 * * *", Timezone: "UTC", Enabled: true, TimeoutSeconds: 600,
				NextRunAt: now.Add(time.Hour).Unix(), CreatedAt: now.Unix()})
			if err != nil {
				t.Fatal(err)
			}
			// Written as Agno's executor writes them: run_id, user_id and
			// completed_at NULL.
			st, _ := sqlstore.FromDB(d)
			dl := st.SQLDialect()
			for id, age := range map[string]int64{"dead": 600 + 300, "live": 600 + 299} {
				at := now.Unix() - age
				if _, err := st.SQL().ExecContext(ctx, dl.Bind("INSERT INTO "+dl.Table(st.Tables().ScheduleRuns)+
					" (id, schedule_id, attempt, triggered_at, status, created_at) VALUES (?, ?, 1, ?, 'running', ?)"),
					id, sc.ID, at, at); err != nil {
					t.Fatal(err)
				}
			}
			s, err := schedule.New(d, neverFirer{t}, schedule.Config{Clock: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			dead, err := d.GetScheduleRun(ctx, "dead")
			if err != nil {
				t.Fatal(err)
			}
			if dead.Status != db.ScheduleRunFailed || dead.CompletedAt != now.Unix() || !strings.Contains(dead.Error, "abandoned") {
				t.Errorf("abandoned attempt: status %q, completed_at %d, error %q; want failed at %d, saying it was abandoned",
					dead.Status, dead.CompletedAt, dead.Error, now.Unix())
			}
			live, err := d.GetScheduleRun(ctx, "live")
			if err != nil {
				t.Fatal(err)
			}
			if live.Status != db.ScheduleRunRunning {
				t.Errorf("attempt within timeout_seconds plus the grace: status %q, want running", live.Status)
			}
		})
	}
}
