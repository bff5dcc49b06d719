package queue

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// The SQLite enqueue writes River's job row as River's InsertTx does (a
// River upgrade that changes its insert fails here), and names it in
// agno_jobs.
func TestSQLiteEnqueue_RiverRowAsInsertTx(t *testing.T) {
	ctx := context.Background()
	q, tx, res, j := riverTwin(t, testdbs.SQLite(t))
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
