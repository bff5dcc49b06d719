package queue

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// Errors of the queue.
var (
	// ErrQueueFull: MaxQueueDepth jobs are queued already.
	ErrQueueFull = errors.New("queue: too many background runs are queued; retry later")
	// ErrNotFound: no job with this id (for this user).
	ErrNotFound = errors.New("queue: job not found")
	// ErrUnsupported: the database cannot hold the durable queue.
	ErrUnsupported = errors.New("queue: the durable queue needs a sqlite or postgres database")
	// ErrCancelled is the cause of a running job's context when its run is
	// cancelled (through any process).
	ErrCancelled = errors.New("queue: the run was cancelled")
	// ErrNotRequeueable: only failed and cancelled jobs can be requeued.
	ErrNotRequeueable = errors.New("queue: only failed or cancelled jobs can be requeued")
	// ErrHeld: the run's job is not paused (queued, executing, or ended):
	// its continue would run it a second time beside its execution.
	ErrHeld = errors.New("queue: the run is not waiting to be continued")
	// errStopped is the cause of a job's context when this process stops.
	errStopped = errors.New("queue: the server stopped")
)

// Handler executes a job's run. ctx is cancelled (context.Cause: ErrCancelled,
// run.ErrFenced, or the process stopping) when the run must stop; its run
// writes through the db front are fenced on the job's attempt. It returns the
// run's final status (COMPLETED, ERROR, CANCELLED, PAUSED); an error means
// the run could not be executed or stored, and the job is retried. The
// queue does not call it for a run whose row is final already (COMPLETED,
// ERROR, CANCELLED: the claim read the row, and the job records that
// status), so a handler need not read the run's row to skip it.
type Handler func(ctx context.Context, j *Job) (run.Status, error)

// Permanent wraps a handler error that retrying cannot fix (the job's agent
// no longer exists, its payload no longer decodes): the job fails at once.
func Permanent(err error) error { return &permanentError{err} }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Job is one background run's job row, in Agno's agno_jobs shape.
type Job struct {
	ID             string          `json:"id"`
	ComponentType  string          `json:"component_type"`
	ComponentID    string          `json:"component_id"`
	JobType        string          `json:"job_type"`
	DeploymentID   string          `json:"deployment_id,omitempty"`
	SessionID      string          `json:"session_id"`
	UserID         string          `json:"user_id,omitempty"`
	Payload        json.RawMessage `json:"payload"`
	Status         string          `json:"status"`
	Attempt        int             `json:"attempt"`
	MaxAttempts    int             `json:"max_attempts"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	AvailableAt    int64           `json:"available_at"`
	LockedBy       string          `json:"locked_by,omitempty"`
	LockedAt       int64           `json:"locked_at,omitempty"`
	Error          string          `json:"error,omitempty"`
	CreatedAt      int64           `json:"created_at"`
	UpdatedAt      int64           `json:"updated_at,omitempty"`
	CompletedAt    int64           `json:"completed_at,omitempty"`
	// RetryDelay, when positive, replaces Config.RetryDelay as the wait
	// before this job's failed attempt is retried (a schedule's
	// retry_delay_seconds). Whole seconds; kept with the engine's job, so
	// it holds after a restart. Not in Agno's job shape.
	RetryDelay time.Duration `json:"-"`
}

// Queue is the durable queue of one process. Open it, Start it after the
// handler can run jobs, Stop it at shutdown.
type Queue struct {
	cfg     Config
	d       *db.DB
	w       *sql.DB
	dialect string
	schema  string
	jobs    string // qualified table names
	keys    string
	handler Handler
	client  *river.Client[*sql.Tx]
	// journal is the database's step journal (nil when its driver keeps
	// none); a run's steps are cleared once its job is final.
	journal *db.Journal
	// group commits concurrent enqueues together (Postgres; nil: each
	// enqueue is its own transaction).
	group *enqueueGroup
	// The enqueue's statements (pipedQueries).
	depthQuery, keyInsertQuery, jobInsertQuery string
	// SQLite's enqueue statements (insertJobSQLite).
	sqliteRiverInsert, sqliteJobInsert string

	mu      sync.Mutex
	running map[string]*holding // run id → the attempt this process executes
	// winding counts the dispatched attempts a newer holding of their run
	// replaced in running (hold) whose workers have not returned yet: they
	// still execute, and count.
	winding int
	peak    int
	// claimFails counts the failed claims of River jobs (by engine job
	// id) since their last claim that worked (claimFailed), each kept
	// claimFailKeep past its job's retry delay (tests shorten it).
	claimFails    map[int64]claimFailCount
	claimFailKeep time.Duration
	// claimFailing is len(claimFails), stored under mu, read without it.
	claimFailing atomic.Int64
	life         context.Context
	stop         context.CancelCauseFunc
	loops        sync.WaitGroup
	started      bool
	// paused stops heartbeats (tests: a process that hangs or is cut off).
	paused atomic.Bool
	// renewed is when the lease loop last renewed the held leases.
	renewed time.Time
	// runStatusRead, when set (tests), is called by setRunStatus between
	// its read of the run row and its write; the function it returns, when
	// not nil, gets the write's outcome (errMoveSkipped when none).
	runStatusRead func(runID string, status run.Status) func(error)
	// beforeClaim, when set (tests), is called by Work before its claim
	// with the run id and River's attempt.
	beforeClaim func(runID string, attempt int)
	// repairPeriod is how often repairLoop repairs runs left behind their
	// ended jobs (repairEvery; tests shorten it).
	repairPeriod time.Duration
	// pausedBatch is how many paused jobs one endContinuedJobs pass looks
	// at (endContinuedBatch; tests lower it), from after pausedAfter, the
	// last id the pass before looked at ("" after the last batch). Only
	// repairLoop touches pausedAfter.
	pausedBatch int
	pausedAfter string
	// repairSettled holds the ended jobs (id → completed_at) whose run the
	// periodic repair found with nothing to move (see repairEndedRuns);
	// only repairLoop touches it. repairRead, when set (tests), is called
	// before the repair reads a job's run.
	repairSettled map[string]int64
	repairRead    func(runID string)
	// requeueRead, when set (tests), is called by Requeue after its read
	// of the run's row, before its transaction.
	requeueRead func(runID string)
	// cancelRead, when set (tests), is called by Cancel after its read of
	// the run's row, before its transaction (cancelQueued).
	cancelRead func(runID string)
}

// holding is a job this process executes.
type holding struct {
	attempt int
	// engine is the engine job id the attempt runs under (0: a foreground
	// lease): with the attempt, the attempt's fencing token (engineCol).
	engine int64
	ctx    context.Context // the attempt's context: its cause says who ended it
	cancel context.CancelCauseFunc
	// finished is the job status the run's final save recorded with it
	// (see fence); "" while the job runs.
	finished string
	// foreground: a streamed or synchronous run's lease (Hold), not a
	// dispatched job; not counted against MaxConcurrency.
	foreground bool
	// replaced: a newer holding of the run took its place in running
	// while it still executes (counted in winding until released).
	replaced bool
}

// fetchCooldown is the shortest time between two of River's fetches. River
// fetches again as soon as a slot frees after a fetch that filled every
// slot, at most once per cooldown, so MaxConcurrency jobs per cooldown is a
// ceiling on throughput: 32 per 50 ms (River's default is 100 ms) capped a
// backlog at 640 runs/s. An idle queue is not fetched more often for it:
// without a backlog fetches wait for PollInterval.
const fetchCooldown = 5 * time.Millisecond

// runArgs is the River job's arguments: the run id; the rest is in agno_jobs.
type runArgs struct {
	RunID string `json:"run_id"`
	// RetryDelay is Job.RetryDelay in seconds (0: the queue's).
	RetryDelay int64 `json:"retry_delay_s,omitempty"`
}

// retryDelay is the wait before a's failed attempt is retried.
func (q *Queue) retryDelay(a runArgs) time.Duration {
	if a.RetryDelay > 0 {
		return time.Duration(a.RetryDelay) * time.Second
	}
	return q.cfg.RetryDelay
}

func (runArgs) Kind() string { return "agentry_run" }

// Open prepares the queue on d's database: River's tables (its migrations)
// and the queue's own, and a River client that starts nothing yet.
func Open(ctx context.Context, d *db.DB, cfg Config, h Handler) (*Queue, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	sw, ok := d.Driver().(db.SQLWriter)
	if !ok {
		return nil, ErrUnsupported
	}
	if _, ok := d.Driver().(db.TxRunSaver); !ok {
		return nil, ErrUnsupported
	}
	wp := sw.SQLWriter()
	if wp.Dialect != "sqlite" && wp.Dialect != "postgres" {
		return nil, fmt.Errorf("%w (this one is %s)", ErrUnsupported, wp.Dialect)
	}
	// The migrations hold a connection with the migration lock while
	// River's migrator takes another: a pool of one would wait forever.
	if n := wp.DB.Stats().MaxOpenConnections; wp.Dialect == "postgres" && n > 0 && n < 2 {
		return nil, fmt.Errorf("%w: the database pool allows %d open connection; the queue's migrations hold 2 at once (raise postgres.Config.MaxOpenConns)", ErrConfig, n)
	}
	if cfg.NodeID == "" {
		b := make([]byte, 6)
		rand.Read(b)
		cfg.NodeID = strings.TrimPrefix(cfg.DeploymentID+"-", "-") + hex.EncodeToString(b)
	}
	q := &Queue{cfg: cfg, d: d, w: wp.DB, dialect: wp.Dialect, schema: wp.Schema, handler: h, running: map[string]*holding{},
		repairPeriod: repairEvery, pausedBatch: endContinuedBatch, repairSettled: map[string]int64{}, claimFailKeep: claimFailKeep}
	q.jobs, q.keys = q.table(jobsTable), q.table(keysTable)
	q.pipedQueries()
	q.sqliteEnqueueQueries()
	if _, ok := d.Driver().(db.PipedRunsSaver); ok && wp.Dialect == "postgres" {
		if ps, ok := d.Driver().(db.PipedRunSaver); ok && ps.PipesRunWrites() {
			q.group = newEnqueueGroup(q)
		}
	}
	if j, err := db.NewJournal(d); err == nil {
		q.journal = j
	}
	q.life, q.stop = context.WithCancelCause(context.Background())

	workers := river.NewWorkers()
	river.AddWorker(workers, &worker{q: q})
	rc := &river.Config{
		ID:                          cfg.NodeID,
		Queues:                      map[string]river.QueueConfig{riverQueue: {MaxWorkers: cfg.MaxConcurrency}},
		Workers:                     workers,
		PollOnly:                    true,
		FetchPollInterval:           cfg.PollInterval,
		FetchCooldown:               min(cfg.PollInterval, fetchCooldown),
		JobTimeout:                  cfg.Timeout,
		MaxAttempts:                 cfg.MaxAttempts,
		RescueStuckJobsAfter:        cfg.Timeout + cfg.LockGrace + time.Minute,
		CompletedJobRetentionPeriod: cfg.Retention,
		CancelledJobRetentionPeriod: cfg.Retention,
		DiscardedJobRetentionPeriod: cfg.Retention,
		Schema:                      wp.Schema,
		Logger:                      cfg.Logger,
	}
	if err := q.migrate(ctx); err != nil {
		return nil, err
	}
	switch wp.Dialect {
	case "sqlite":
		q.client, err = river.NewClient(riversqlite.New(wp.DB), rc)
	default:
		q.client, err = river.NewClient[*sql.Tx](quietDriver{riverdatabasesql.New(wp.DB)}, rc)
	}
	if err != nil {
		return nil, fmt.Errorf("queue: river client: %w", err)
	}
	return q, nil
}

// quietDriver is River's database/sql driver for Postgres without NOTIFY.
// Every client of the queue polls (PollOnly: database/sql has no
// listener), so the pg_notify River sends with inserts (at most one per
// queue per fetch cooldown: most enqueues under load) reaches no one and
// costs a round trip in the enqueue's transaction.
type quietDriver struct{ *riverdatabasesql.Driver }

func (quietDriver) SupportsListenNotify() bool { return false }

// table qualifies a table name with the store's schema.
func (q *Queue) table(name string) string {
	if q.schema == "" {
		return `"` + name + `"`
	}
	return `"` + q.schema + `"."` + name + `"`
}

// sql rebinds a ? query for the dialect.
func (q *Queue) sql(s string) string { return rebind(q.dialect, s) }

// migrate runs River's migrations and creates the queue's tables; on
// Postgres under an advisory lock so that replicas starting together take
// turns.
func (q *Queue) migrate(ctx context.Context) error {
	if q.dialect == "postgres" {
		conn, err := q.w.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(7402931)`); err != nil {
			return fmt.Errorf("queue: lock migrations: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(7402931)`)
		if _, err := q.w.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS "`+q.schema+`"`); err != nil && q.schema != "" {
			return err
		}
	}
	var err error
	opts := &rivermigrate.Config{Schema: q.schema}
	if q.dialect == "sqlite" {
		m, merr := rivermigrate.New(riversqlite.New(q.w), opts)
		if merr != nil {
			return merr
		}
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	} else {
		m, merr := rivermigrate.New(riverdatabasesql.New(q.w), opts)
		if merr != nil {
			return merr
		}
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err != nil {
		return fmt.Errorf("queue: river migrations: %w", err)
	}
	for _, stmt := range ddl(q.dialect) {
		stmt = strings.ReplaceAll(stmt, `TABLE IF NOT EXISTS `+jobsTable, `TABLE IF NOT EXISTS `+q.jobs)
		stmt = strings.ReplaceAll(stmt, `TABLE IF NOT EXISTS `+keysTable, `TABLE IF NOT EXISTS `+q.keys)
		stmt = strings.ReplaceAll(stmt, ` ON `+jobsTable+` (`, ` ON `+q.jobs+` (`)
		if _, err := q.w.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("queue: create tables: %w", err)
		}
	}
	return nil
}

// Journal is the step journal background runs record their steps in, for
// agent.WithJournal with the job's attempt; nil when the database keeps
// none. The queue clears a run's steps once its job is final (not paused).
func (q *Queue) Journal() *db.Journal { return q.journal }

// clearJournal deletes a finished run's steps (best effort: a leftover
// journal only costs space).
func (q *Queue) clearJournal(ctx context.Context, runID string) {
	if q.journal == nil {
		return
	}
	if err := q.journal.ClearJournal(context.WithoutCancel(ctx), runID); err != nil {
		q.cfg.Logger.WarnContext(ctx, "queue: clear the step journal", "run_id", runID, "err", err)
	}
}

// NodeID is this process's name in locked_by.
func (q *Queue) NodeID() string { return q.cfg.NodeID }

// Config returns the queue's configuration with defaults applied.
func (q *Queue) Config() Config { return q.cfg }

// Start moves the runs left behind their ended jobs to their jobs' ends,
// recovers the jobs of crashed processes (at once when SingleNode), then
// starts dispatching, heartbeats, the lease sweep and the repair. A Start
// that returned an error started nothing and may be called again.
func (q *Queue) Start(ctx context.Context) error {
	q.mu.Lock()
	if q.started {
		q.mu.Unlock()
		return errors.New("queue: already started")
	}
	q.started = true
	q.mu.Unlock()
	// A start that fails before River runs can be tried again (a single
	// node's recovery behind a lock that outlasted the query timeout): it
	// started nothing, and its passes are safe to repeat.
	notStarted := func(err error) error {
		q.mu.Lock()
		q.started = false
		q.mu.Unlock()
		return err
	}
	// Runs left PENDING or RUNNING behind a job that ended (any replica's,
	// before this start): see repairEndedRuns.
	if err := q.repairLiveRuns(ctx); err != nil {
		q.cfg.Logger.WarnContext(ctx, "queue: repair runs left behind their ended jobs", "err", err)
	}
	if q.cfg.SingleNode {
		if err := q.recoverAll(ctx); err != nil {
			return notStarted(err)
		}
	}
	if err := q.client.Start(q.life); err != nil {
		return notStarted(fmt.Errorf("queue: start river: %w", err))
	}
	q.loops.Add(2)
	go q.leaseLoop()
	go q.repairLoop()
	return nil
}

// Stop stops claiming jobs and waits for the running ones until ctx ends;
// then their contexts are cancelled and they are left to recovery (their
// leases expire; a restarted single node resumes them at once).
func (q *Queue) Stop(ctx context.Context) error {
	q.mu.Lock()
	started := q.started
	q.mu.Unlock()
	if !started {
		return nil
	}
	err := q.client.Stop(ctx)
	if err != nil {
		q.stop(errStopped)
		q.cancelAll(errStopped)
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = q.client.StopAndCancel(sctx)
		cancel()
	}
	q.stop(errStopped)
	q.loops.Wait()
	return err
}

func (q *Queue) cancelAll(cause error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, h := range q.running {
		h.cancel(cause)
	}
}

// Running returns how many runs this process executes now, and the most it
// executed at once since Open.
func (q *Queue) Running() (now, peak int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dispatched(), q.peak
}

// dispatched counts the jobs this process executes (not foreground
// leases), replaced attempts still winding down included.
func (q *Queue) dispatched() int {
	n := q.winding
	for _, h := range q.running {
		if !h.foreground {
			n++
		}
	}
	return n
}

func unixNow() int64 { return time.Now().Unix() }
