package queue

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// insertJobSQLite writes j's River job row and its agno_jobs row in tx, as
// two plain statements. River's InsertTx on SQLite (riversqlite v0.51.2)
// builds a JSON array of the jobs, has SQLite take it apart with json_each,
// returns and parses the whole row, adds a uniqueness nonce to metadata
// and writes an insert notification to river_notification that no one
// reads (the queue polls): about 150 µs of the writer connection per
// enqueue, a quarter of a run's time in the SQLite group commit. The row
// written is InsertTx's for our jobs (no unique options, not scheduled):
// state available, priority 1, metadata {}, tags [], created_at and
// scheduled_at SQLite's clock with milliseconds.
// TestSQLiteEnqueue_RiverRowAsInsertTx compares the two rows.
func (q *Queue) insertJobSQLite(ctx context.Context, tx *sql.Tx, j *Job) error {
	args, err := json.Marshal(runArgs{RunID: j.ID, RetryDelay: int64(j.RetryDelay / time.Second)})
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, q.sqliteRiverInsert, args, runArgs{}.Kind(), q.cfg.MaxAttempts, riverPriority, riverQueue); err != nil {
		return err
	}
	// last_insert_rowid() is the River row's id: the insert above is this
	// connection's last, in the same transaction (River's tables have no
	// triggers).
	_, err = tx.ExecContext(ctx, q.sqliteJobInsert, jobInsertArgs(make([]any, 0, 15), j)...)
	return err
}

// sqliteEnqueueQueries builds insertJobSQLite's statements.
func (q *Queue) sqliteEnqueueQueries() {
	q.sqliteRiverInsert = `INSERT INTO ` + q.table("river_job") + ` (args, created_at, kind, max_attempts, metadata, priority, queue, scheduled_at, state, tags)
VALUES (jsonb(?), datetime('now', 'subsec'), ?, ?, jsonb('{}'), ?, ?, datetime('now', 'subsec'), 'available', jsonb('[]'))`
	q.sqliteJobInsert = `INSERT INTO ` + q.jobs + ` (` + jobInsertCols + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, last_insert_rowid())`
}
