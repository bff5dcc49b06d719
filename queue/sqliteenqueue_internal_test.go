package queue

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// The SQLite enqueue writes River's job row as River's InsertTx does (a
// River upgrade that changes its insert fails here), and names it in
// agno_jobs.
func TestSQLiteEnqueue_RiverRowAsInsertTx(t *testing.T) {
	d := testdbs.SQLite(t)
	q, err := Open(context.Background(), d, Config{MaxAttempts: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tx, err := q.w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	res, err := q.client.InsertTx(ctx, tx, runArgs{RunID: "r1", RetryDelay: 7}, &river.InsertOpts{Queue: riverQueue, MaxAttempts: q.cfg.MaxAttempts})
	if err != nil {
		t.Fatal(err)
	}
	j := &Job{ID: "r1", ComponentType: "agent", ComponentID: "a1", JobType: "run", SessionID: "s1", UserID: "u1",
		Payload: []byte(`{"x":1}`), Status: StatusQueued, MaxAttempts: q.cfg.MaxAttempts, RetryDelay: 7 * time.Second,
		AvailableAt: 1, CreatedAt: 1, UpdatedAt: 1}
	if err := q.insertJobSQLite(ctx, tx, j); err != nil {
		t.Fatal(err)
	}
	var engineID int64
	if err := tx.QueryRowContext(ctx, `SELECT engine_job_id FROM `+q.jobs+` WHERE id = ?`, "r1").Scan(&engineID); err != nil {
		t.Fatal(err)
	}
	if engineID == res.Job.ID || engineID == 0 {
		t.Fatalf("agno_jobs.engine_job_id %d; River's InsertTx job is %d", engineID, res.Job.ID)
	}
	row := func(id int64) string {
		// Every column but the id, the insert times (SQLite's clock when
		// each statement ran: checked to be one value, and recent) and
		// InsertTx's uniqueness nonce in metadata, with each value's type.
		var s string
		err := tx.QueryRowContext(ctx, `SELECT json_array(
	json(args), typeof(args), attempt, attempted_at, json(attempted_by), typeof(created_at), json(errors), finalized_at, kind, max_attempts,
	json_remove(json(metadata), '$."river:unique_nonce"'), typeof(metadata), priority, queue, state, typeof(scheduled_at), json(tags), typeof(tags),
	unique_key, unique_states)
FROM `+q.table("river_job")+` WHERE id = ? AND created_at = scheduled_at AND julianday('now') - julianday(created_at) < 1.0/86400*60`, id).Scan(&s)
		if err != nil {
			t.Fatalf("River job %d: %v", id, err)
		}
		return s
	}
	if want, got := row(res.Job.ID), row(engineID); want != got {
		t.Fatalf("River's job row differs:\nInsertTx: %s\nours:     %s", want, got)
	}
	t.Log(row(engineID))
}
