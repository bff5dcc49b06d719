package runlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
)

// RunState is what a run's database says of its end, read in one
// statement: its row's status and, for a run on the durable queue, its
// job's status and attempt. One statement reads one snapshot on every
// dialect (Postgres's and MySQL's statement snapshot, SQLite's read
// transaction): the row and the job always agree, where two reads could
// pair a retried attempt's final row with its job's later outcome.
type RunState struct {
	// Status is the run row's status.
	Status run.Status
	// Job reports whether the run has a job on the durable queue; JobStatus
	// and JobAttempt are its status ("queued", "running", …) and attempt.
	Job        bool
	JobStatus  string
	JobAttempt int
}

// ErrNoRunsTable: the log's database is not one of sqlstore's (its runs
// table is unknown).
var ErrNoRunsTable = errors.New("runlog: the run's state needs the store's runs table")

// State reads runID's RunState in one statement (the run's row joined to
// its job when jobs is set: the durable queue keeps its jobs in the same
// database, so it must have created them). A run with no row is
// db.ErrNotFound. The read is not scoped to a user: the caller checked the
// run is the user's.
func (l *Log) State(ctx context.Context, runID string, jobs bool) (st RunState, err error) {
	if l.runs == "" {
		return RunState{}, ErrNoRunsTable
	}
	ctx, cancel := l.bound(ctx)
	defer cancel()
	defer func() { err = l.unavailable(ctx, err) }()
	var (
		status    string
		jobStatus sql.NullString
		attempt   sql.NullInt64
	)
	if jobs {
		err = l.r.QueryRowContext(ctx, l.q(`SELECT r.status, j.status, j.attempt FROM `+l.runs+` r LEFT JOIN `+l.jobs+` j ON j.id = r.run_id WHERE r.run_id = ?`), runID).
			Scan(&status, &jobStatus, &attempt)
	} else {
		err = l.r.QueryRowContext(ctx, l.q(`SELECT status FROM `+l.runs+` WHERE run_id = ?`), runID).Scan(&status)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return RunState{}, fmt.Errorf("%w: run %s", db.ErrNotFound, runID)
	case err != nil:
		return RunState{}, err
	}
	return RunState{Status: run.Status(status), Job: jobStatus.Valid, JobStatus: jobStatus.String, JobAttempt: int(attempt.Int64)}, nil
}

// storeTables sets the qualified names of the store's runs and jobs tables
// (State), when d's driver is sqlstore's.
func (l *Log) storeTables(d *db.DB) {
	st, ok := sqlstore.FromDB(d)
	if !ok || st.SQLDialect() == nil {
		return
	}
	l.runs, l.jobs = st.SQLDialect().Table(st.Tables().Runs), st.SQLDialect().Table(sqlstore.JobsTable)
}
