package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// CatchUp is the policy for due times missed while no scheduler ran.
type CatchUp string

// Catch-up policies (see the package documentation).
const (
	CatchUpLatest CatchUp = "latest"
	CatchUpAll    CatchUp = "all"
	CatchUpSkip   CatchUp = "skip"
)

// Defaults of Config.
const (
	DefaultPollInterval = 15 * time.Second
	DefaultMaxCatchUp   = 10
	// maxScan bounds the due times one poll walks for one schedule (a
	// minutely schedule down for two years).
	maxScan = 1 << 20
	// maxWindow bounds the window dueTimes reads due times from before it
	// walks from next_run_at instead.
	maxWindow = 100 * 365 * 24 * time.Hour
	// batch is how many due schedules one poll reads at a time.
	batch = 100
)

// ErrConfig marks an unusable Config.
var ErrConfig = errors.New("schedule: invalid config")

// ErrPermanent wraps a Firer error that firing again cannot fix (the
// component no longer exists, the payload does not decode): the firing is
// recorded as failed and the schedule moves on.
var ErrPermanent = errors.New("schedule: the schedule cannot fire")

// Config configures a Scheduler. Zero values take the defaults.
type Config struct {
	// PollInterval is how often the database is read for due schedules
	// (15 s, as Agno's poller).
	PollInterval time.Duration
	// CatchUp is the policy for due times missed during downtime (latest).
	CatchUp CatchUp
	// MaxCatchUp bounds the firings CatchUpAll makes for one schedule in
	// one poll (10).
	MaxCatchUp int
	// MisfireGrace is how late a due time may be and still fire under
	// CatchUpSkip (twice PollInterval, at least one minute).
	MisfireGrace time.Duration
	// Clock returns the current time (time.Now).
	Clock  func() time.Time
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.CatchUp == "" {
		c.CatchUp = CatchUpLatest
	}
	if c.MaxCatchUp == 0 {
		c.MaxCatchUp = DefaultMaxCatchUp
	}
	if c.MisfireGrace == 0 {
		c.MisfireGrace = max(2*c.PollInterval, time.Minute)
	}
	switch {
	case c.PollInterval < 10*time.Millisecond:
		return c, fmt.Errorf("%w: poll_interval must be at least 0.01 seconds", ErrConfig)
	case c.CatchUp != CatchUpLatest && c.CatchUp != CatchUpAll && c.CatchUp != CatchUpSkip:
		return c, fmt.Errorf("%w: catch_up %q is not latest, all or skip", ErrConfig, c.CatchUp)
	case c.MaxCatchUp < 1:
		return c, fmt.Errorf("%w: max_catch_up must be at least 1", ErrConfig)
	case c.MisfireGrace < 0:
		return c, fmt.Errorf("%w: misfire_grace_seconds must not be negative", ErrConfig)
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Firing is one start of a schedule's run.
type Firing struct {
	// Key is the idempotency key of the run's job: the same for every
	// replica firing the same due time.
	Key string
	// DueAt is the due time (the time of a manual trigger for Trigger).
	DueAt time.Time
}

// Fired is what a Firer started.
type Fired struct {
	RunID, SessionID string
	// Input is the run's input as recorded in the schedule run.
	Input json.RawMessage
}

// Firer starts a schedule's run as a durable background run, idempotent
// on f.Key: a second call with the same key starts nothing and returns the
// first run.
type Firer interface {
	Fire(ctx context.Context, s *db.Schedule, f Firing) (Fired, error)
}

// Canceller is a Firer that can stop a run it started: the scheduler
// cancels a fired run still going past its schedule's timeout_seconds.
type Canceller interface {
	CancelFired(ctx context.Context, s *db.Schedule, runID string) error
}

// Key is the idempotency key of a schedule's firing at due.
func Key(scheduleID string, due time.Time) string {
	return "agentry-schedule:" + scheduleID + "@" + strconv.FormatInt(due.Unix(), 10)
}

// RetryKey is the idempotency key of attempt (2 or more) of the firing of
// scheduleID due at due: Key with the attempt, so each retry of a due
// time starts once across replicas.
func RetryKey(scheduleID string, due time.Time, attempt int64) string {
	return Key(scheduleID, due) + "#" + strconv.FormatInt(attempt, 10)
}

// DefaultRetryDelay is the wait before a retry when a schedule's
// retry_delay_seconds is 0 (Agno's default).
const DefaultRetryDelay = 60 * time.Second

// retryDelay is sc's wait between a failed attempt and the next.
func retryDelay(sc *db.Schedule) time.Duration {
	if sc.RetryDelaySeconds <= 0 {
		return DefaultRetryDelay
	}
	return time.Duration(sc.RetryDelaySeconds) * time.Second
}

// nextRunID is the schedule run id of the attempt after r. A cron
// firing's attempts are keyed by (schedule, due time, attempt); a manual
// trigger's retries, whose first key is unique to the call, by the
// attempt they follow.
func nextRunID(r *db.ScheduleRun) string {
	due := time.Unix(r.TriggeredAt, 0)
	if r.ID == runIDOf(attemptKey(r.ScheduleID, due, r.Attempt)) {
		return runIDOf(attemptKey(r.ScheduleID, due, r.Attempt+1))
	}
	return runIDOf("agentry-schedule:" + r.ScheduleID + ":retry-of:" + r.ID + "#" + strconv.FormatInt(r.Attempt+1, 10))
}

// attemptKey is Key for the first attempt, RetryKey for the others.
func attemptKey(scheduleID string, due time.Time, attempt int64) string {
	if attempt <= 1 {
		return Key(scheduleID, due)
	}
	return RetryKey(scheduleID, due, attempt)
}

// retryKey is the idempotency key of retry row r's run: RetryKey when r
// retries a cron firing, else one derived from r's id (unique to it).
func retryKey(r *db.ScheduleRun) string {
	if k := RetryKey(r.ScheduleID, time.Unix(r.TriggeredAt, 0), r.Attempt); runIDOf(k) == r.ID {
		return k
	}
	return "agentry-schedule:" + r.ScheduleID + ":retry:" + r.ID + "#" + strconv.FormatInt(r.Attempt, 10)
}

// ownRetry reports whether retry row r (running, no run yet) is one this
// scheduler wrote to fire after its delay, rather than an attempt another
// executor is running. Agno's executor writes every attempt's row, the
// retries' too, running with run_id NULL right before it calls the
// endpoint, and names the run only when its polling of the run ends (up
// to timeout_seconds later); agno_schedule_runs has no owner column to
// tell whose a row is, and agno_schedules' locked_by is not renewed
// (stale for Agno after 300 s while its executor still runs). What tells
// them apart is the id, which must be exactly the one this scheduler
// derives (nextRunID) from the attempt r follows: a cron firing's from
// the row's own columns (RetryKey), a manual trigger's from the previous
// attempt's id, so that attempt is looked up (same schedule, due time and
// attempt number less one). Any other id, a random one as Agno writes or
// a name-based one another tool derived, is not ours: that row is failed
// as abandoned after its timeout and grace, never fired, since firing it
// would run the attempt a second time.
func (s *Scheduler) ownRetry(ctx context.Context, r *db.ScheduleRun) (bool, error) {
	if r.Attempt < 2 {
		return false, nil
	}
	if r.ID == runIDOf(RetryKey(r.ScheduleID, time.Unix(r.TriggeredAt, 0), r.Attempt)) {
		return true, nil
	}
	if id, err := uuid.Parse(r.ID); err != nil || id.Version() != 5 {
		return false, nil // not name-based: no lookup
	}
	f := db.ScheduleRunFilter{ScheduleID: r.ScheduleID, TriggeredAt: r.TriggeredAt, Attempt: r.Attempt - 1, Limit: batch}
	for f.Page = 1; ; f.Page++ {
		prev, total, err := s.d.ListScheduleRuns(ctx, f)
		if err != nil && !errors.Is(err, db.ErrCorruptRow) {
			return false, fmt.Errorf("schedule run %s: read the attempt it follows: %w", r.ID, err)
		}
		for i := range prev {
			if nextRunID(&prev[i]) == r.ID {
				return true, nil
			}
		}
		if len(prev) < batch || f.Page*batch >= total {
			return false, nil
		}
	}
}

// runIDOf is the schedule run id of a firing: derived from its key, so
// that replicas write the same row.
func runIDOf(key string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(key)).String()
}

// Scheduler fires the schedules of one database.
type Scheduler struct {
	cfg  Config
	d    *db.DB
	fire Firer

	mu      sync.Mutex
	stop    context.CancelFunc
	stopped chan struct{}
}

// New returns a Scheduler of d's schedules that fires through f.
func New(d *db.DB, f Firer, cfg Config) (*Scheduler, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if d == nil || f == nil {
		return nil, fmt.Errorf("%w: a database and a firer are required", ErrConfig)
	}
	if !d.SupportsSchedules() {
		return nil, fmt.Errorf("%w: the %s database does not store schedules", ErrConfig, d.Driver().Dialect())
	}
	return &Scheduler{cfg: cfg, d: d, fire: f}, nil
}

// Config returns the scheduler's configuration with defaults applied.
func (s *Scheduler) Config() Config { return s.cfg }

// Now is the scheduler's clock.
func (s *Scheduler) Now() time.Time { return s.cfg.Clock() }

// NextRun returns the first due time of expr in tz after the clock's now,
// as epoch seconds (0 when it never comes).
func (s *Scheduler) NextRun(spec *Spec) int64 {
	n := spec.Next(s.Now())
	if n.IsZero() {
		return 0
	}
	return n.Unix()
}

// Start polls every PollInterval until Stop (or ctx ends).
func (s *Scheduler) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		return
	}
	ctx, s.stop = context.WithCancel(ctx)
	s.stopped = make(chan struct{})
	go func() {
		defer close(s.stopped)
		t := time.NewTicker(s.cfg.PollInterval)
		defer t.Stop()
		for {
			if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Error("schedule: poll failed", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends the polling loop and waits for the poll in progress.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	stop, stopped := s.stop, s.stopped
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		stop()
		<-stopped
	}
}

// Tick is one poll: it fires what is due at the clock's now and finishes
// the schedule runs whose run ended.
//
// The due schedules are read in (next_run_at, id) order, each batch after
// the last schedule of the one before: a schedule that cannot fire stays
// due at the head of the order, and however many of them there are, the
// schedules due after them are still read (and fired) in the same poll.
func (s *Scheduler) Tick(ctx context.Context) error {
	now := s.Now()
	var errs []error
	reported := false
	var after *db.DueCursor
	limit := batch
	for {
		due, err := s.d.DueSchedules(ctx, now.Unix(), after, limit)
		corrupt := 0
		switch {
		case err != nil && errors.Is(err, db.ErrCorruptRow):
			// Rows another writer left undecodable are reported; the
			// schedules due with them still fire.
			corrupt = countCorrupt(err)
			if !reported {
				errs, reported = append(errs, err), true
			}
		case err != nil:
			return errors.Join(append(errs, err)...)
		}
		prev := after
		for i := range due {
			sc := &due[i]
			after = &db.DueCursor{NextRunAt: sc.NextRunAt, ID: sc.ID}
			if err := s.fireDue(ctx, sc, now); err != nil {
				errs = append(errs, fmt.Errorf("schedule %s: %w", sc.ID, err))
			}
		}
		// A short batch is the last one; the corrupt rows left out of it
		// count. A batch that gives no row to resume after (corrupt rows
		// only), or none past the last (a next_run_at stored as a REAL,
		// read truncated: the rows of its second are read again), is read
		// again from the same place, twice as many rows: the reads end.
		if len(due)+corrupt < limit {
			break
		}
		if after == nil || (prev != nil && !cursorAfter(*after, *prev)) {
			after, limit = prev, limit*2
		} else {
			limit = batch
		}
	}
	if err := s.reconcile(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// cursorAfter reports whether a is past b in the (next_run_at, id) order.
func cursorAfter(a, b db.DueCursor) bool {
	return a.NextRunAt > b.NextRunAt || (a.NextRunAt == b.NextRunAt && a.ID > b.ID)
}

// countCorrupt counts the rows err reports undecodable.
func countCorrupt(err error) int {
	switch e := err.(type) {
	case *db.CorruptRowError:
		return 1
	case interface{ Unwrap() []error }:
		n := 0
		for _, x := range e.Unwrap() {
			n += countCorrupt(x)
		}
		return n
	case interface{ Unwrap() error }:
		return countCorrupt(e.Unwrap())
	}
	return 0
}

// dueTimes lists the due times of sc at or before now that the catch-up
// policy fires, oldest first, and the next due time after now. first is
// next_run_at: the first of them, followed by the expression's due times
// after it. A first at or before the epoch is Agno's "due now" (a row
// written with next_run_at 0, which Agno's poller claims at once): it
// fires once, for the expression's latest due time.
//
// The due times are read from a window ending at now, doubled until it
// holds as many as the policy keeps or reaches back to first: a schedule
// down for years is not walked from first (a walk that stopped partway
// fired due times years old instead of the latest).
func (s *Scheduler) dueTimes(spec *Spec, first, now time.Time) (fire []time.Time, next time.Time) {
	keep := 1
	if s.cfg.CatchUp == CatchUpAll {
		keep = s.cfg.MaxCatchUp
	}
	dueNow := first.Unix() <= 0
	if dueNow {
		keep = 1
	}
	var all []time.Time // the last keep due times
	for w := time.Hour; ; w *= 2 {
		from := now.Add(-w)
		whole := !from.After(first) || w > maxWindow
		all = all[:0]
		t := spec.Next(from)
		if whole {
			t = first
			if dueNow {
				t = spec.Next(time.Unix(0, 0))
			}
		}
		for i := 0; i < maxScan && !t.IsZero() && !t.After(now); i++ {
			all = append(all, t)
			if len(all) > keep {
				all = all[1:]
			}
			t = spec.Next(t)
		}
		if whole || len(all) >= keep {
			break
		}
	}
	if s.cfg.CatchUp == CatchUpSkip {
		if len(all) > 0 && now.Sub(all[len(all)-1]) > s.cfg.MisfireGrace {
			all = nil
		}
	}
	return all, spec.Next(now)
}

// fireDue fires sc's due times and advances its next_run_at.
func (s *Scheduler) fireDue(ctx context.Context, sc *db.Schedule, now time.Time) error {
	if reason, msg, drifted := endpointDrift(sc); drifted {
		due := time.Unix(sc.NextRunAt, 0)
		if sc.NextRunAt <= 0 {
			due = now
		}
		return s.refuseDrift(ctx, sc, Firing{Key: driftKey(sc.ID, time.Unix(sc.NextRunAt, 0)), DueAt: due}, reason, msg)
	}
	spec, err := Parse(sc.CronExpr, sc.Timezone)
	if err != nil {
		// A row written around the API (or a zone removed from tzdata):
		// disable it with the reason rather than fail every poll. Only
		// that: an edit made since the row was read (a fixed expression)
		// is kept, and no column this scheduler read is written back.
		disabled, uerr := s.d.DisableSchedule(ctx, sc, "invalid_schedule: "+err.Error())
		if !disabled && uerr == nil {
			return nil // edited since it was read: the next poll reads it again
		}
		s.cfg.Logger.Error("schedule: disabled a schedule that no longer parses", "schedule_id", sc.ID, "err", err)
		return errors.Join(err, uerr)
	}
	times, next := s.dueTimes(spec, time.Unix(sc.NextRunAt, 0), now)
	if skipped := s.cfg.CatchUp != CatchUpAll && len(times) == 0; skipped {
		s.cfg.Logger.Info("schedule: skipped missed firings", "schedule_id", sc.ID, "policy", string(s.cfg.CatchUp))
	}
	for _, due := range times {
		if err := s.fireOnce(ctx, sc, Firing{Key: Key(sc.ID, due), DueAt: due}); err != nil {
			return err // next_run_at stays: the next poll repeats this firing
		}
	}
	var to int64 // NULL: never due again
	if next.IsZero() {
		s.cfg.Logger.Warn("schedule: the cron expression matches no time in the next five years; the schedule will not fire again",
			"schedule_id", sc.ID, "cron_expr", sc.CronExpr, "timezone", sc.Timezone)
	} else {
		to = next.Unix()
	}
	if _, err := s.d.AdvanceSchedule(ctx, sc.ID, sc.NextRunAt, to); err != nil {
		return err
	}
	return nil
}

// fireOnce starts one firing and records its schedule run; a firing that
// another replica recorded already is left alone.
func (s *Scheduler) fireOnce(ctx context.Context, sc *db.Schedule, f Firing) error {
	id := runIDOf(f.Key)
	if _, err := s.d.GetScheduleRun(ctx, id); err == nil {
		return nil
	}
	fired, err := s.fire.Fire(ctx, sc, f)
	row := &db.ScheduleRun{ID: id, ScheduleID: sc.ID, Attempt: 1, TriggeredAt: f.DueAt.Unix(), Status: db.ScheduleRunRunning,
		RunID: fired.RunID, SessionID: fired.SessionID, Input: fired.Input, UserID: sc.UserID, CreatedAt: s.Now().Unix()}
	switch {
	case errors.Is(err, ErrPermanent):
		row.Status, row.Error, row.CompletedAt = db.ScheduleRunFailed, err.Error(), row.CreatedAt
		s.cfg.Logger.Warn("schedule: firing failed", "schedule_id", sc.ID, "err", err)
	case err != nil:
		return err
	}
	if _, err := s.d.CreateScheduleRun(ctx, row); err != nil && !errors.Is(err, db.ErrExists) {
		return err
	}
	s.cfg.Logger.Info("schedule: fired", "schedule_id", sc.ID, "due_at", f.DueAt.UTC().Format(time.RFC3339), "run_id", fired.RunID)
	return nil
}

// Trigger fires sc now, outside its cron (the trigger route), and returns
// the schedule run. Its key is unique to this call.
func (s *Scheduler) Trigger(ctx context.Context, sc *db.Schedule) (*db.ScheduleRun, error) {
	now := s.Now()
	f := Firing{Key: "agentry-schedule:" + sc.ID + ":trigger:" + uuid.NewString(), DueAt: now}
	if reason, msg, drifted := endpointDrift(sc); drifted {
		if err := s.refuseDrift(ctx, sc, f, reason, msg); err != nil {
			return nil, err
		}
		return s.d.GetScheduleRun(context.WithoutCancel(ctx), runIDOf(f.Key))
	}
	if err := s.fireOnce(ctx, sc, f); err != nil {
		return nil, err
	}
	return s.d.GetScheduleRun(context.WithoutCancel(ctx), runIDOf(f.Key))
}

// statusOf maps a run's final status to its schedule run's.
func statusOf(st run.Status) (string, bool) {
	switch st {
	case run.StatusCompleted:
		return db.ScheduleRunSuccess, true
	case run.StatusError:
		return db.ScheduleRunFailed, true
	case run.StatusCancelled:
		return db.ScheduleRunCancelled, true
	case run.StatusPaused:
		return db.ScheduleRunPaused, true
	}
	return "", false
}

// reconcile finishes running schedule runs whose run ended, and those
// whose run outlived its schedule's timeout_seconds (measured from the
// firing, by the scheduler's clock): the run is cancelled and the schedule
// run failed, as Agno fails a firing whose polling timed out.
func (s *Scheduler) reconcile(ctx context.Context) error {
	// All running rows are read before any is finished: finishing rows
	// while paging would shift the later pages over rows not yet seen.
	var running []db.ScheduleRun
	var errs []error
	for page := 1; ; page++ {
		rows, total, err := s.d.ListScheduleRuns(ctx, db.ScheduleRunFilter{Status: db.ScheduleRunRunning, Limit: batch, Page: page})
		corrupt := 0
		switch {
		case err != nil && errors.Is(err, db.ErrCorruptRow):
			// A row another writer left undecodable is reported (once);
			// the firings read with it are still followed.
			corrupt = countCorrupt(err)
			if len(errs) == 0 {
				errs = append(errs, err)
			}
		case err != nil:
			return err
		}
		running = append(running, rows...)
		if len(rows)+corrupt < batch || page*batch >= total {
			break
		}
	}
	scheds := map[string]*db.Schedule{} // the running runs' schedules (nil: deleted)
	for _, r := range running {
		if r.RunID == "" {
			own, err := s.ownRetry(ctx, &r)
			switch {
			case err != nil: // not known whose: left for the next poll
			case own: // a retry waiting for its delay
				err = s.fireRetry(ctx, &r, scheds)
			default:
				err = s.failAbandoned(ctx, &r, scheds)
			}
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		out, err := s.d.GetRun(ctx, r.RunID)
		if errors.Is(err, db.ErrNotFound) {
			// Fire stored the run before this row: it was deleted (its
			// session with it), and nothing will ever end it. Not
			// retried: whoever deleted it did not want it.
			fin := &db.ScheduleRun{ID: r.ID, Status: db.ScheduleRunFailed, CompletedAt: s.Now().Unix(),
				Error: "run " + r.RunID + " no longer exists: it was deleted before it was seen to end"}
			if _, err := s.d.FinishScheduleRun(ctx, fin); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st, done := statusOf(out.Status)
		if !done {
			if err := s.timeOut(ctx, &r, out, scheds); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		fin := &db.ScheduleRun{ID: r.ID, Status: st, CompletedAt: s.Now().Unix(), Output: runOutput(out)}
		if out.Status == run.StatusPaused {
			// What the run waits for, as Agno's executor records it.
			fin.Requirements = runRequirements(out)
		}
		if out.Status == run.StatusCancelled {
			// Cancelled past its timeout: timeOut's cancel, seen by this
			// poll before timeOut recorded the failure (another
			// scheduler's poll, or this one's next after a failed write).
			limit, expired, err := s.expired(ctx, &r, scheds)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if expired {
				st, fin.Status, fin.Error = db.ScheduleRunFailed, db.ScheduleRunFailed, timeoutError(r.RunID, limit)
			}
		}
		if st == db.ScheduleRunFailed {
			if fin.Error == "" {
				fin.Error = "the run ended " + string(out.Status)
			}
			if err := s.retryLater(ctx, &r, scheds); err != nil {
				errs = append(errs, err) // r stays running: the next poll repeats
				continue
			}
		}
		if _, err := s.d.FinishScheduleRun(ctx, fin); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// abandonGrace is how long past its schedule's timeout_seconds another
// executor's attempt may stay running without a run before the scheduler
// fails it:
// Agno's stale-lock grace (300 s).
const abandonGrace = 300 * time.Second

// defaultTimeout bounds an abandoned attempt whose schedule has no
// timeout_seconds (Agno's default).
const defaultTimeout = 3600 * time.Second

// abandonedError is the error text of an attempt failed by
// failAbandoned.
const abandonedError = "abandoned: no run was recorded for this firing within the schedule's timeout_seconds (%d s) " +
	"plus %d s; the process that fired it stopped before it started or recorded its run"

// failAbandoned fails attempt r, running without a run and not one of
// this scheduler's waiting retries (ownRetry), once it is older than its
// schedule's timeout_seconds plus abandonGrace. This scheduler writes a
// first attempt with its run, so such a row is another writer's: Agno's
// executor inserts each attempt's row before calling the endpoint and
// names the run when its polling ends (within timeout_seconds), so a row
// still without a run after that was left by a process that died. Until
// then it is the live executor's and left alone. Not retried: whether a
// run started is unknown.
func (s *Scheduler) failAbandoned(ctx context.Context, r *db.ScheduleRun, scheds map[string]*db.Schedule) error {
	sc, err := s.scheduleOf(ctx, r.ScheduleID, scheds)
	if err != nil {
		return err
	}
	timeout := defaultTimeout
	if sc != nil && sc.TimeoutSeconds > 0 {
		timeout = time.Duration(sc.TimeoutSeconds) * time.Second
	}
	now := s.Now()
	if now.Before(time.Unix(r.CreatedAt, 0).Add(timeout + abandonGrace)) {
		return nil
	}
	fin := &db.ScheduleRun{ID: r.ID, Status: db.ScheduleRunFailed, CompletedAt: now.Unix(),
		Error: fmt.Sprintf(abandonedError, int64(timeout/time.Second), int64(abandonGrace/time.Second))}
	finished, err := s.d.FinishScheduleRun(ctx, fin)
	if err != nil {
		return fmt.Errorf("schedule run %s: fail abandoned attempt: %w", r.ID, err)
	}
	if finished {
		s.cfg.Logger.Warn("schedule: failed an abandoned firing that never recorded a run", "schedule_id", r.ScheduleID,
			"schedule_run_id", r.ID)
	}
	return nil
}

// scheduleOf returns r's schedule (nil when deleted), read once per poll.
func (s *Scheduler) scheduleOf(ctx context.Context, id string, scheds map[string]*db.Schedule) (*db.Schedule, error) {
	sc, ok := scheds[id]
	if ok {
		return sc, nil
	}
	sc, err := s.d.GetSchedule(ctx, id)
	switch {
	case errors.Is(err, db.ErrNotFound):
		sc = nil
	case err != nil:
		return nil, err
	}
	scheds[id] = sc
	return sc, nil
}

// retryLater records the next attempt of failed attempt r when its
// schedule allows one more (max_retries, as Agno's executor: attempts
// 1 … max_retries+1) and is enabled: a running schedule run without a
// run, of the same due time, created now; fireRetry starts it
// retry_delay_seconds later. Its id is derived from r's, so replicas
// write one row; r is finished after this, so a crash in between repeats
// it.
func (s *Scheduler) retryLater(ctx context.Context, r *db.ScheduleRun, scheds map[string]*db.Schedule) error {
	sc, err := s.scheduleOf(ctx, r.ScheduleID, scheds)
	if err != nil || sc == nil || !sc.Enabled || r.Attempt > sc.MaxRetries {
		return err
	}
	next := &db.ScheduleRun{ID: nextRunID(r), ScheduleID: r.ScheduleID, Attempt: r.Attempt + 1, TriggeredAt: r.TriggeredAt,
		Status: db.ScheduleRunRunning, UserID: sc.UserID, CreatedAt: s.Now().Unix()}
	if _, err := s.d.CreateScheduleRun(ctx, next); err != nil && !errors.Is(err, db.ErrExists) {
		return fmt.Errorf("schedule run %s: record attempt %d: %w", r.ID, next.Attempt, err)
	}
	s.cfg.Logger.Info("schedule: firing failed, retrying", "schedule_id", sc.ID, "attempt", next.Attempt,
		"max_attempts", sc.MaxRetries+1, "retry_delay", retryDelay(sc))
	return nil
}

// fireRetry starts retry row r once its schedule's retry delay has passed
// since it was recorded, with the attempt's idempotency key, and names
// the run on the row. A retry whose schedule was deleted or disabled in
// the meantime is cancelled.
func (s *Scheduler) fireRetry(ctx context.Context, r *db.ScheduleRun, scheds map[string]*db.Schedule) error {
	sc, err := s.scheduleOf(ctx, r.ScheduleID, scheds)
	if err != nil {
		return err
	}
	now := s.Now()
	if sc == nil || !sc.Enabled {
		fin := &db.ScheduleRun{ID: r.ID, Status: db.ScheduleRunCancelled, CompletedAt: now.Unix(),
			Error: "the schedule was disabled or deleted before this retry fired"}
		_, err := s.d.FinishScheduleRun(ctx, fin)
		return err
	}
	if now.Before(time.Unix(r.CreatedAt, 0).Add(retryDelay(sc))) {
		return nil
	}
	if reason, msg, drifted := endpointDrift(sc); drifted {
		// Repointed since the attempt before: the retry is refused, as
		// the schedule's next firing would be.
		fin := &db.ScheduleRun{ID: r.ID, Status: db.ScheduleRunFailed, CompletedAt: now.Unix(), Error: msg}
		if _, err := s.d.FinishScheduleRun(ctx, fin); err != nil {
			return err
		}
		_, err := s.d.DisableSchedule(ctx, sc, reason)
		return err
	}
	fired, err := s.fire.Fire(ctx, sc, Firing{Key: retryKey(r), DueAt: time.Unix(r.TriggeredAt, 0)})
	switch {
	case errors.Is(err, ErrPermanent):
		s.cfg.Logger.Warn("schedule: retry failed", "schedule_id", sc.ID, "attempt", r.Attempt, "err", err)
		_, err = s.d.FinishScheduleRun(ctx, &db.ScheduleRun{ID: r.ID, Status: db.ScheduleRunFailed, CompletedAt: now.Unix(), Error: err.Error()})
		return err
	case err != nil:
		return fmt.Errorf("schedule run %s: fire attempt %d: %w", r.ID, r.Attempt, err)
	}
	if _, err := s.d.StartScheduleRun(ctx, &db.ScheduleRun{ID: r.ID, RunID: fired.RunID, SessionID: fired.SessionID, Input: fired.Input}); err != nil {
		return err
	}
	s.cfg.Logger.Info("schedule: retried", "schedule_id", sc.ID, "attempt", r.Attempt, "run_id", fired.RunID)
	return nil
}

// timeOut cancels r's run and fails r when the run has been going longer
// than its schedule's timeout_seconds (from its firing: for a retry, its
// retry delay after it was recorded). A timed-out attempt is retried as a
// failed one. A run the cancel found over (it ended on its own since the
// poll read it) is left to the next poll, which records how it ended.
func (s *Scheduler) timeOut(ctx context.Context, r *db.ScheduleRun, out *db.Run, scheds map[string]*db.Schedule) error {
	limit, expired, err := s.expired(ctx, r, scheds)
	if err != nil || !expired {
		return err
	}
	sc, err := s.scheduleOf(ctx, r.ScheduleID, scheds)
	if err != nil || sc == nil {
		return err
	}
	now := s.Now().Unix()
	if c, ok := s.fire.(Canceller); ok {
		if err := c.CancelFired(ctx, sc, r.RunID); err != nil {
			return fmt.Errorf("schedule run %s: cancel run %s after its timeout: %w", r.ID, r.RunID, err)
		}
		// The run may have ended on its own since it was read, and the
		// cancel found it over: the next poll records how it ended
		// (completed: a success, not a failure retried as a second run).
		// A crash from here on leaves the run cancelled past its
		// timeout, which the next poll fails and retries as below.
		after, err := s.d.GetRun(ctx, r.RunID)
		switch {
		case errors.Is(err, db.ErrNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("schedule run %s: read run %s after its cancel: %w", r.ID, r.RunID, err)
		}
		if _, done := statusOf(after.Status); done && after.Status != run.StatusCancelled {
			return nil
		}
		out = after
	}
	if err := s.retryLater(ctx, r, scheds); err != nil {
		return err
	}
	fin := &db.ScheduleRun{ID: r.ID, Status: db.ScheduleRunFailed, CompletedAt: now, Output: runOutput(out),
		Error: timeoutError(r.RunID, limit)}
	if _, err := s.d.FinishScheduleRun(ctx, fin); err != nil {
		return err
	}
	s.cfg.Logger.Warn("schedule: run timed out", "schedule_id", r.ScheduleID, "run_id", r.RunID, "timeout_seconds", limit)
	return nil
}

// expired reports whether r's run has been going longer than its
// schedule's timeout_seconds (limit; 3,600 when unset, Agno's
// executor's default), by the scheduler's clock: from its
// firing, or for a retry its retry delay after it was recorded. A deleted
// schedule's runs are not bounded any more.
func (s *Scheduler) expired(ctx context.Context, r *db.ScheduleRun, scheds map[string]*db.Schedule) (limit int64, expired bool, err error) {
	sc, err := s.scheduleOf(ctx, r.ScheduleID, scheds)
	if err != nil || sc == nil {
		return 0, false, err
	}
	limit = sc.TimeoutSeconds
	if limit <= 0 {
		// Unset (a row written around the API): Agno's executor bounds
		// its polling by its own default then, as failAbandoned does.
		limit = int64(defaultTimeout / time.Second)
	}
	started := r.CreatedAt
	if r.Attempt > 1 {
		started += int64(retryDelay(sc) / time.Second)
	}
	return limit, s.Now().Unix() >= started+limit, nil
}

// timeoutError is the error of a schedule run whose run timed out.
func timeoutError(runID string, limit int64) string {
	return fmt.Sprintf("run %s did not finish within timeout_seconds (%d s): cancelled", runID, limit)
}

// runRequirements are a paused run's requirements (nil when it has none),
// as stored in its run_data.
func runRequirements(r *db.Run) json.RawMessage {
	var data struct {
		Requirements json.RawMessage `json:"requirements"`
	}
	if json.Unmarshal(r.RunData, &data) != nil {
		return nil
	}
	if b := bytes.TrimSpace(data.Requirements); len(b) == 0 || b[0] != '[' || bytes.Equal(b, []byte("[]")) {
		return nil // Agno records a non-empty list only
	}
	return data.Requirements
}

// runOutput is the schedule run's output: the run's content and
// content_type (Agno's executor writes these two), its id and status.
func runOutput(r *db.Run) json.RawMessage {
	var data struct {
		Content     any    `json:"content"`
		ContentType string `json:"content_type"`
	}
	_ = json.Unmarshal(r.RunData, &data)
	out := map[string]any{"run_id": r.RunID, "status": r.Status, "content": data.Content}
	if data.ContentType != "" {
		out["content_type"] = data.ContentType
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return b
}
