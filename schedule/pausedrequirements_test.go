package schedule_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/run"
)

// TestTick_APausedFiringRecordsItsRunsRequirements: a firing whose run
// paused records what the run waits for in its requirements, as Agno's
// executor does, so GET /schedules/{id}/runs shows it; they were null.
func TestTick_APausedFiringRecordsItsRunsRequirements(t *testing.T) {
	t.Parallel()
	reqs := `[{"id":"call_1","kind":"confirmation","tool_execution":{"tool_call_id":"call_1","tool_name":"delete_file","requires_confirmation":true}}]`
	for name, d := range map[string]*db.DB{"sqlite": testdbs.SQLite(t), "postgres": testdbs.Postgres(t), "mysql": testdbs.MySQL(t), "memory": testdbs.Memory(t)} {
		ctx := context.Background()
		f := newFirings(t, d)
		for id, status := range map[string]run.Status{"paused": run.StatusPaused, "done": run.StatusCompleted} {
			f.running("sr-"+id, id, status, `{"run_id":"`+id+`","content":"c","requirements":`+reqs+`}`, f.now.Unix())
		}
		f.tick()
		paused, err := d.GetScheduleRun(ctx, "sr-paused")
		if err != nil {
			t.Fatal(err)
		}
		if diff := jsontest.Diff([]byte(reqs), paused.Requirements); paused.Status != db.ScheduleRunPaused || diff != "" {
			t.Errorf("%s: paused firing %s with requirements %s: %s", name, paused.Status, paused.Requirements, diff)
		}
		done, err := d.GetScheduleRun(ctx, "sr-done")
		if err != nil {
			t.Fatal(err)
		}
		if done.Status != db.ScheduleRunSuccess || len(done.Requirements) != 0 {
			t.Errorf("%s: completed firing %s with requirements %s, want none", name, done.Status, done.Requirements)
		}
	}
}
