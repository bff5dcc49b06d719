package queue

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// The piped enqueue writes River's job row as River's InsertTx does (a River
// upgrade that changes its insert fails here), and names it in agno_jobs.
func TestPipedEnqueue_RiverRowAsInsertTx(t *testing.T) {
	ctx := context.Background()
	q, tx, res, j := riverTwin(t, testdbs.Postgres(t))
	st := q.pipedEnqueue(j)[0]
	var engineID int64
	if err := tx.QueryRowContext(ctx, q.sql(st.Query), st.Args...).Scan(&engineID); err != nil {
		t.Fatal(err)
	}
	var stored int64
	if err := tx.QueryRowContext(ctx, q.sql(`SELECT engine_job_id FROM `+q.jobs+` WHERE id = ?`), "r1").Scan(&stored); err != nil || stored != engineID || engineID == res.Job.ID {
		t.Fatalf("agno_jobs.engine_job_id %d (%v); the piped insert returned %d, River's job is %d", stored, err, engineID, res.Job.ID)
	}
	row := func(id int64) string {
		var s string
		// Everything but the id and the insert times (the client's clock
		// when the statement was made, in both).
		if err := tx.QueryRowContext(ctx, q.sql(`SELECT (to_jsonb(r) - 'id' - 'created_at' - 'scheduled_at')::text FROM `+q.table("river_job")+` AS r
	WHERE id = ? AND created_at = scheduled_at AND scheduled_at BETWEEN now() AND clock_timestamp()`), id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if want, got := row(res.Job.ID), row(engineID); want != got {
		t.Fatalf("River's job row differs:\nInsertTx: %s\npiped:    %s", want, got)
	}
}

// riverTwin opens a queue (not started) on d, begins a transaction rolled
// back with the test and inserts in it River's own job for run r1 through
// InsertTx (res); j is the agno_jobs row of the same run, for the enqueue
// under test to write beside it.
func riverTwin(t *testing.T, d *db.DB) (q *Queue, tx *sql.Tx, res *rivertype.JobInsertResult, j *Job) {
	t.Helper()
	q, err := Open(context.Background(), d, Config{MaxAttempts: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tx, err = q.w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	res, err = q.client.InsertTx(ctx, tx, runArgs{RunID: "r1", RetryDelay: 7}, &river.InsertOpts{Queue: riverQueue, MaxAttempts: q.cfg.MaxAttempts})
	if err != nil {
		t.Fatal(err)
	}
	j = &Job{ID: "r1", ComponentType: "agent", ComponentID: "a1", JobType: "run", SessionID: "s1", UserID: "u1",
		Payload: []byte(`{"x":1}`), Status: StatusQueued, MaxAttempts: q.cfg.MaxAttempts, RetryDelay: 7 * time.Second,
		AvailableAt: 1, CreatedAt: 1, UpdatedAt: 1}
	return q, tx, res, j
}
