package queue

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Config configures a Queue. Zero values take the documented defaults (those
// of Agno's QueueConfig where it has one).
type Config struct {
	// MaxConcurrency bounds the runs this process executes at once (32).
	MaxConcurrency int
	// MaxQueueDepth bounds the queued (not yet running) jobs of the whole
	// deployment; past it Enqueue fails with ErrQueueFull (1000). Exact
	// within one process; several Postgres processes can pass it together
	// by up to half of it each, for at most 250 ms (see
	// docs/adr/queue-depth-count-skip.md).
	MaxQueueDepth int
	// MaxAttempts is how many times a run is started, counting restarts after
	// a crash, before it ends as ERROR (5).
	MaxAttempts int
	// RetryDelay is the wait before a failed attempt is retried (30 s).
	RetryDelay time.Duration
	// Timeout bounds one attempt (1 h).
	Timeout time.Duration
	// LockGrace is how long a running job's lease lives without a heartbeat
	// before another process takes the run over (60 s; at least 1 s).
	LockGrace time.Duration
	// PollInterval is how often a process looks for queued jobs, heartbeats
	// its leases and looks for cancellations (1 s).
	PollInterval time.Duration
	// Retention is how long finished job rows are kept (24 h). Idempotency
	// keys are kept for good, until their run's session is deleted.
	Retention time.Duration
	// DeploymentID, when set, is stamped on the jobs this process enqueues
	// and this process claims only jobs with it or none.
	DeploymentID string
	// NodeID names this process in locked_by; empty means a random id
	// prefixed with DeploymentID.
	NodeID string
	// SingleNode says no other process uses the database (SQLite, whose file
	// lock ensures it): at start every running job is an orphan and is
	// resumed at once instead of after LockGrace.
	SingleNode bool
	Logger     *slog.Logger
}

// Defaults of Config.
const (
	DefaultMaxConcurrency = 32
	DefaultMaxQueueDepth  = 1000
	DefaultMaxAttempts    = 5
	DefaultRetryDelay     = 30 * time.Second
	DefaultTimeout        = time.Hour
	DefaultLockGrace      = 60 * time.Second
	DefaultPollInterval   = time.Second
	DefaultRetention      = 24 * time.Hour
)

// ErrConfig marks an unusable Config.
var ErrConfig = errors.New("queue: invalid config")

func (c Config) withDefaults() (Config, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxConcurrency, DefaultMaxConcurrency)
	def(&c.MaxQueueDepth, DefaultMaxQueueDepth)
	def(&c.MaxAttempts, DefaultMaxAttempts)
	defD(&c.RetryDelay, DefaultRetryDelay)
	defD(&c.Timeout, DefaultTimeout)
	defD(&c.LockGrace, DefaultLockGrace)
	defD(&c.PollInterval, DefaultPollInterval)
	defD(&c.Retention, DefaultRetention)
	switch {
	case c.MaxConcurrency < 1 || c.MaxQueueDepth < 1 || c.MaxAttempts < 1:
		return c, fmt.Errorf("%w: max_concurrency, max_queue_depth and max_attempts must be at least 1", ErrConfig)
	case c.RetryDelay < 0 || c.Timeout < 0 || c.Retention < 0:
		return c, fmt.Errorf("%w: retry_delay_seconds, timeout_seconds and retention_seconds must not be negative", ErrConfig)
	case c.LockGrace < time.Second:
		return c, fmt.Errorf("%w: lock_grace_seconds must be at least 1", ErrConfig)
	case c.PollInterval < 10*time.Millisecond:
		return c, fmt.Errorf("%w: poll_interval must be at least 0.01 seconds", ErrConfig)
	case c.PollInterval > c.LockGrace/2:
		return c, fmt.Errorf("%w: poll_interval (%s) must be at most half of lock_grace_seconds (%s): heartbeats run at poll_interval", ErrConfig, c.PollInterval, c.LockGrace)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}
