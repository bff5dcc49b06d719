package config

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Queue configures background runs, as Agno's QueueConfig. In YAML:
//
//	queue:
//	  durable: true            # crash-safe queue in the database (sqlite, postgres)
//	  max_concurrency: 32      # runs executing at once per process (env AGENTRY_BACKGROUND_MAX_CONCURRENCY)
//	  max_queue_depth: 1000    # queued runs before 429
//	  max_attempts: 5          # starts of a run (restarts after crashes count) before ERROR
//	  retry_delay_seconds: 30
//	  timeout_seconds: 3600
//	  lock_grace_seconds: 60   # lease without heartbeat before another replica takes a run over
//	  poll_interval: 1.0       # seconds between polls and heartbeats
//	  retention_seconds: 86400 # finished job rows kept this long
//	  deployment_id: ""        # claim only this deployment's jobs
//
// With durable false (the default) background runs execute in the server
// process: not crash-safe (a process that dies leaves them PENDING or
// RUNNING); only max_concurrency and max_queue_depth apply then.
type Queue struct {
	Durable           bool    `yaml:"durable"`
	MaxConcurrency    int     `yaml:"max_concurrency"`
	MaxQueueDepth     int     `yaml:"max_queue_depth"`
	MaxAttempts       int     `yaml:"max_attempts"`
	RetryDelaySeconds float64 `yaml:"retry_delay_seconds"`
	TimeoutSeconds    float64 `yaml:"timeout_seconds"`
	LockGraceSeconds  float64 `yaml:"lock_grace_seconds"`
	PollInterval      float64 `yaml:"poll_interval"`
	RetentionSeconds  float64 `yaml:"retention_seconds"`
	DeploymentID      string  `yaml:"deployment_id"`
}

// MaxDurableConcurrency is the durable queue's largest max_concurrency
// (River's workers per queue).
const MaxDurableConcurrency = 10_000

// Seconds turns a seconds setting into a duration (0 stays 0: the default).
func Seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// durationOK reports whether v units make a time.Duration: not negative,
// not NaN, finite and within the type's range (about 292 years). NaN, +Inf
// and larger values would otherwise convert to a zero, negative or
// implementation-specific duration.
func durationOK(v float64, unit time.Duration) bool {
	return v >= 0 && v*float64(unit) < math.MaxInt64
}

// badSeconds reports a seconds setting that is no duration.
func badSeconds(bad func(string, ...any), key string, v float64) {
	if !durationOK(v, time.Second) {
		bad("%s %v: use a number of seconds from 0 to %d", key, v, int64(math.MaxInt64/time.Second))
	}
}

// validate refuses negative values, seconds that are no duration and
// durable-only settings without durable (they would be ignored).
func (q Queue) validate(bad func(string, ...any)) {
	for name, v := range map[string]int{"max_concurrency": q.MaxConcurrency, "max_queue_depth": q.MaxQueueDepth, "max_attempts": q.MaxAttempts} {
		if v < 0 {
			bad("queue.%s must not be negative", name)
		}
	}
	for name, v := range map[string]float64{"retry_delay_seconds": q.RetryDelaySeconds, "timeout_seconds": q.TimeoutSeconds,
		"lock_grace_seconds": q.LockGraceSeconds, "poll_interval": q.PollInterval, "retention_seconds": q.RetentionSeconds} {
		badSeconds(bad, "queue."+name, v)
	}
	if q.Durable {
		if q.MaxConcurrency > MaxDurableConcurrency {
			bad("queue.max_concurrency %d: the durable queue runs at most %d at once per process", q.MaxConcurrency, MaxDurableConcurrency)
		}
		return
	}
	for name, set := range map[string]bool{"max_attempts": q.MaxAttempts != 0, "retry_delay_seconds": q.RetryDelaySeconds != 0,
		"timeout_seconds": q.TimeoutSeconds != 0, "lock_grace_seconds": q.LockGraceSeconds != 0, "poll_interval": q.PollInterval != 0,
		"retention_seconds": q.RetentionSeconds != 0, "deployment_id": q.DeploymentID != ""} {
		if set {
			bad("queue.%s applies to the durable queue only: set queue.durable: true (or remove it)", name)
		}
	}
}

// backgroundConcurrencyEnv overrides queue.max_concurrency.
const backgroundConcurrencyEnv = "AGENTRY_BACKGROUND_MAX_CONCURRENCY"

func (q *Queue) applyEnv(get func(...string) (string, bool)) error {
	if v, ok := get(backgroundConcurrencyEnv); ok {
		// Atoi, as AGENTRY_PORT: fmt.Sscan read "5abc" as 5 and "0x10" as 16.
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("config: %s=%q is not a positive number", backgroundConcurrencyEnv, v)
		}
		q.MaxConcurrency = n
	}
	return nil
}
