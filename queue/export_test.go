package queue

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/agentryhq/agentry/run"
)

// Hang makes this queue act like a process that hangs or is cut off from the
// database: no more heartbeats and no more fetching, while the runs it holds
// keep going. Wake resumes heartbeats (fetching stays off).
func (q *Queue) Hang() {
	q.paused.Store(true)
	go q.client.Stop(context.WithoutCancel(q.life))
}

// Wake resumes a hung queue's heartbeats.
func (q *Queue) Wake() { q.paused.Store(false) }

// OnRunStatusRead sets a hook called between the read and the write of the
// queue's run status moves (set it before Start); the function it returns,
// when not nil, gets the move's outcome (ErrMoveSkipped when it wrote
// nothing).
func (q *Queue) OnRunStatusRead(f func(runID string, status run.Status) func(error)) {
	q.runStatusRead = f
}

// ErrMoveSkipped is errMoveSkipped for tests.
var ErrMoveSkipped = errMoveSkipped

// EnqueueGroup says whether a caller leads an enqueue group commit now,
// and how many enqueues wait for the next group (Postgres).
func (q *Queue) EnqueueGroup() (leading bool, pending int) {
	if q.group == nil {
		return false, 0
	}
	return q.group.g.State()
}

// NoEnqueueGroup makes every enqueue its own transaction (benchmarks).
func (q *Queue) NoEnqueueGroup() { q.group = nil }

// Claim claims id's job for attempt as a River worker of the row's engine
// job does before it runs the job; false when the job is not claimable.
func (q *Queue) Claim(ctx context.Context, id string, attempt int) (bool, error) {
	engine, err := q.engineOf(ctx, id)
	if err != nil {
		return false, err
	}
	_, claimed, err := q.claim(ctx, id, attempt, engine)
	return claimed, err
}

// engineOf is the engine job id of id's row (0: none).
func (q *Queue) engineOf(ctx context.Context, id string) (int64, error) {
	var engine int64
	err := q.w.QueryRowContext(ctx, q.sql(`SELECT `+engineCol+` FROM `+q.jobs+` WHERE id = ?`), id).Scan(&engine)
	return engine, err
}

// Renew renews the leases of ids as the heartbeat does.
func (q *Queue) Renew(ctx context.Context, ids []string) error {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return q.renew(ctx, args)
}

// Fenced is the context a worker runs attempt of id under, as claimed by
// Claim (the row's engine job): its run writes fenced on the attempt and
// keyed by the job row.
func (q *Queue) Fenced(ctx context.Context, id string, attempt int) context.Context {
	engine, err := q.engineOf(ctx, id)
	if err != nil {
		panic(err)
	}
	return q.fenced(ctx, id, attempt, engine)
}

// ListCountQuery is the statement List counts f's jobs with, and its
// arguments (for query plans).
func (q *Queue) ListCountQuery(f Filter) (string, []any) {
	where, args := listWhere(f)
	return q.countQuery(where), append(args, f.Page*f.Limit+ListCountAhead)
}

// PlannedQueries are the queue's statements on agno_jobs whose plans tests
// look at, by name, with arguments.
func (q *Queue) PlannedQueries(now int64) map[string]PlannedQuery {
	page := func(f Filter) PlannedQuery {
		where, args := listWhere(f)
		return PlannedQuery{q.listQuery(where), append(args, f.Limit, 0)}
	}
	count := func(f Filter) PlannedQuery {
		query, args := q.ListCountQuery(f)
		return PlannedQuery{query, args}
	}
	all := Filter{Limit: 20, Page: 1}
	failed := Filter{Status: StatusFailed, Limit: 20, Page: 1}
	completed := Filter{Status: StatusCompleted, Limit: 20, Page: 1}
	// GET /queue/jobs with user isolation on: one user's jobs.
	user := Filter{UserID: "u1", Scoped: true, Limit: 20, Page: 1}
	return map[string]PlannedQuery{
		"list":                  page(all),
		"list by status":        page(failed),
		"list by common status": page(completed),
		"count":                 count(all),
		"count by status":       count(completed),
		"list by user":          page(user),
		"count by user":         count(user),
		"stats":                 {q.statsQuery(""), nil},
		"oldest queued":         {q.oldestQuery(""), []any{StatusQueued, now}},
		"retention":             {q.retentionQuery(), []any{StatusCompleted, StatusFailed, StatusCancelled, now - 86400, now - 86400}},
	}
}

// PlannedQuery is a statement and its arguments.
type PlannedQuery struct {
	Query string
	Args  []any
}

// StopHeartbeats stops this queue's heartbeats (its leases are neither
// renewed nor looked at) while it keeps fetching and running jobs: what
// happens before a run's next heartbeat. Wake resumes them.
func (q *Queue) StopHeartbeats() { q.paused.Store(true) }

// AgeLease moves the lease of id's job back by age, as if its holder had
// not renewed it since.
func (q *Queue) AgeLease(ctx context.Context, id string, age time.Duration) error {
	_, err := q.w.ExecContext(ctx, q.sql(`UPDATE `+q.jobs+` SET locked_at = locked_at - ? WHERE id = ?`), int64(age/time.Second), id)
	return err
}

// Redispatch makes id's River job available again while it runs, as River's
// rescuer does with a job running past its timeout.
func (q *Queue) Redispatch(ctx context.Context, id string) error {
	_, err := q.w.ExecContext(ctx, q.sql(`UPDATE `+q.table("river_job")+` SET state = 'available', scheduled_at = `+q.nowSQL()+`
WHERE id = (SELECT engine_job_id FROM `+q.jobs+` WHERE id = ?)`), id)
	return err
}

// EngineJob is a River job of a run: its state, attempt and how many
// times it was snoozed.
type EngineJob struct {
	State   string
	Attempt int
	Snoozes int
}

// EngineJobs are the River jobs of run id, oldest first.
func (q *Queue) EngineJobs(ctx context.Context, id string) ([]EngineJob, error) {
	res, err := q.client.JobList(ctx, river.NewJobListParams().Kinds(runArgs{}.Kind()).First(10000))
	if err != nil {
		return nil, err
	}
	var out []EngineJob
	for _, rj := range res.Jobs {
		var a runArgs
		if err := json.Unmarshal(rj.EncodedArgs, &a); err != nil {
			return nil, err
		}
		var meta struct {
			Snoozes int `json:"snoozes"`
		}
		if len(rj.Metadata) > 0 {
			if err := json.Unmarshal(rj.Metadata, &meta); err != nil {
				return nil, err
			}
		}
		if a.RunID == id {
			out = append(out, EngineJob{State: string(rj.State), Attempt: rj.Attempt, Snoozes: meta.Snoozes})
		}
	}
	return out, nil
}

// Rescue does to id's River job what River's rescuer does to a job
// running past RescueStuckJobsAfter: retryable (available now) while its
// attempt is below its max_attempts, discarded otherwise. It reports the
// state it set.
func (q *Queue) Rescue(ctx context.Context, id string) (string, error) {
	var attempt, maxAttempts int
	var engine int64
	if err := q.w.QueryRowContext(ctx, q.sql(`SELECT id, attempt, max_attempts FROM `+q.table("river_job")+`
WHERE id = (SELECT engine_job_id FROM `+q.jobs+` WHERE id = ?) AND state = 'running'`), id).Scan(&engine, &attempt, &maxAttempts); err != nil {
		return "", err
	}
	state, fin := "retryable", "NULL"
	if attempt >= maxAttempts {
		state, fin = "discarded", q.nowSQL()
	}
	_, err := q.w.ExecContext(ctx, q.sql(`UPDATE `+q.table("river_job")+` SET state = '`+state+`', finalized_at = `+fin+`, scheduled_at = `+q.nowSQL()+`
WHERE id = ? AND state = 'running'`), engine)
	return state, err
}

// FailClaims makes every claim fail while on (a trigger refusing updates
// that set a job row running): a permanent error of the claim, while the
// database takes other writes.
func (q *Queue) FailClaims(ctx context.Context, on bool) error {
	return q.refuseJobUpdates(ctx, "agentry_test_fail_claim", "NEW.status = 'running'", on)
}

// FailJobWrites makes every update of a job row fail while on, claims and
// the writes that would end a run included, as a database that is down
// would.
func (q *Queue) FailJobWrites(ctx context.Context, on bool) error {
	return q.refuseJobUpdates(ctx, "agentry_test_fail_job_writes", "1 = 1", on)
}

// refuseJobUpdates adds (on) or drops the trigger name, which refuses the
// updates of job rows where cond holds.
func (q *Queue) refuseJobUpdates(ctx context.Context, name, cond string, on bool) error {
	var stmts []string
	switch {
	case q.dialect == "postgres" && on:
		schema := q.jobs[:strings.LastIndex(q.jobs, ".")+1]
		stmts = []string{
			`CREATE OR REPLACE FUNCTION ` + schema + name + `() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF ` + cond + ` THEN RAISE EXCEPTION 'injected claim failure'; END IF; RETURN NEW; END $$`,
			`CREATE TRIGGER ` + name + ` BEFORE UPDATE ON ` + q.jobs + ` FOR EACH ROW EXECUTE FUNCTION ` + schema + name + `()`}
	case q.dialect == "postgres":
		stmts = []string{`DROP TRIGGER ` + name + ` ON ` + q.jobs}
	case on:
		stmts = []string{`CREATE TRIGGER ` + name + ` BEFORE UPDATE ON ` + q.jobs + ` WHEN ` + cond + ` BEGIN SELECT RAISE(ABORT, 'injected claim failure'); END`}
	default:
		stmts = []string{`DROP TRIGGER ` + name}
	}
	for _, s := range stmts {
		if _, err := q.w.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// MinClaimTries is minClaimTries for tests.
const MinClaimTries = minClaimTries

// BeforeClaim sets a hook Work calls before its claim, with the run id
// and River's attempt (set it before Start).
func (q *Queue) BeforeClaim(f func(runID string, attempt int)) { q.beforeClaim = f }

// LockJobsTable takes, in a transaction of its own, the lock on agno_jobs
// that every statement on it waits for (Postgres: ACCESS EXCLUSIVE), as a
// migration or a long DDL would; release rolls it back.
func (q *Queue) LockJobsTable(ctx context.Context) (release func(), err error) {
	tx, err := q.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `LOCK TABLE `+q.jobs+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		tx.Rollback()
		return nil, err
	}
	return func() { tx.Rollback() }, nil
}

// RepairEvery sets how often the queue repairs runs left behind
// their ended jobs (set it before Start).
func (q *Queue) RepairEvery(d time.Duration) { q.repairPeriod = d }

// RefuseRunStatus makes every update of a run row to status (ERROR,
// PENDING) fail while on (a trigger on the runs table), as a database
// refusing the second write of a failed run's end would.
func (q *Queue) RefuseRunStatus(ctx context.Context, status run.Status, on bool) error {
	name := "agentry_test_refuse_run_" + strings.ToLower(string(status))
	runs := q.table("agno_runs")
	var stmts []string
	switch {
	case q.dialect == "postgres" && on:
		schema := q.jobs[:strings.LastIndex(q.jobs, ".")+1]
		stmts = []string{
			`CREATE OR REPLACE FUNCTION ` + schema + name + `() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.status = '` + string(status) + `' THEN RAISE EXCEPTION 'injected run write refusal'; END IF; RETURN NEW; END $$`,
			`CREATE TRIGGER ` + name + ` BEFORE UPDATE ON ` + runs + ` FOR EACH ROW EXECUTE FUNCTION ` + schema + name + `()`}
	case q.dialect == "postgres":
		stmts = []string{`DROP TRIGGER ` + name + ` ON ` + runs}
	case on:
		stmts = []string{`CREATE TRIGGER ` + name + ` BEFORE UPDATE ON ` + runs + ` WHEN NEW.status = '` + string(status) + `' BEGIN SELECT RAISE(ABORT, 'injected run write refusal'); END`}
	default:
		stmts = []string{`DROP TRIGGER ` + name}
	}
	for _, s := range stmts {
		if _, err := q.w.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// EndContinuedJobs runs one pass of the repair loop's look at paused jobs
// whose runs were continued to their end, batch jobs at a time.
func (q *Queue) EndContinuedJobs(ctx context.Context, batch int) error {
	q.pausedBatch = batch
	return q.endContinuedJobs(ctx)
}

// RepairEndedRuns runs one periodic look at the runs left behind their
// ended jobs (the last ten minutes' jobs); read, when not nil, is called
// before each run it reads (set it before the first look).
func (q *Queue) RepairEndedRuns(ctx context.Context, read func(runID string)) error {
	q.repairRead = read
	return q.repairEndedRuns(ctx, time.Now().Add(-repairWindow).Unix())
}

// CorruptRunData replaces the run_data of run id's row with JSON that no
// run decodes from (an array), as a row written by a broken process
// would hold: reading the whole row fails with db.ErrCorruptRow, its
// status column stays readable.
func (q *Queue) CorruptRunData(ctx context.Context, id string) error {
	_, err := q.w.ExecContext(ctx, q.sql(`UPDATE `+q.table("agno_runs")+` SET run_data = '[1]' WHERE run_id = ?`), id)
	return err
}

// Heartbeat runs the heartbeat's renewal and look at this process's
// leases once, as the lease loop does (StopHeartbeats keeps the loop's
// own off).
func (q *Queue) Heartbeat(ctx context.Context) error {
	q.mu.Lock()
	held := make(map[string]*holding, len(q.running))
	for id, h := range q.running {
		if h.finished == "" {
			held[id] = h
		}
	}
	q.mu.Unlock()
	_, err := q.heartbeatHeld(ctx, held, true)
	return err
}

// Sweep runs one lease sweep, as the lease loop does.
func (q *Queue) Sweep(ctx context.Context) error {
	return q.sweep(ctx, time.Now().Add(-q.cfg.LockGrace).Unix())
}

// ClaimFailing is how many River jobs have failed claims counted.
func (q *Queue) ClaimFailing() int64 { return q.claimFailing.Load() }

// KeepClaimFailures sets how long a failed claim's count is kept past its
// job's retry delay (set it before Start).
func (q *Queue) KeepClaimFailures(d time.Duration) { q.claimFailKeep = d }

// OnRequeueRead sets a hook Requeue calls between its read of the run's
// row and its transaction.
func (q *Queue) OnRequeueRead(f func(runID string)) { q.requeueRead = f }

// OnCancelRead sets a hook Cancel calls between its read of the run's row
// and the transaction that cancels a queued or paused job.
func (q *Queue) OnCancelRead(f func(runID string)) { q.cancelRead = f }
