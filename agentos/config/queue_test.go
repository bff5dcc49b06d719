package config

import (
	"strings"
	"testing"
	"time"
)

func TestParse_QueueSettings(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`queue:
  durable: true
  max_concurrency: 8
  max_queue_depth: 50
  max_attempts: 3
  retry_delay_seconds: 0.5
  timeout_seconds: 600
  lock_grace_seconds: 5
  poll_interval: 0.25
  retention_seconds: 3600
  deployment_id: blue
`), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	q := cfg.Queue
	if !q.Durable || q.MaxConcurrency != 8 || q.MaxQueueDepth != 50 || q.MaxAttempts != 3 || Seconds(q.RetryDelaySeconds) != 500*time.Millisecond ||
		Seconds(q.LockGraceSeconds) != 5*time.Second || Seconds(q.PollInterval) != 250*time.Millisecond || q.DeploymentID != "blue" {
		t.Fatalf("%+v", q)
	}
}

func TestValidate_QueueRefusesDurableOnlyKeysWithoutDurable(t *testing.T) {
	t.Parallel()
	for yaml, want := range map[string]string{
		"queue:\n  lock_grace_seconds: 5\n":                "queue.lock_grace_seconds applies to the durable queue only",
		"queue:\n  max_attempts: 2\n":                      "queue.max_attempts applies to the durable queue only",
		"queue:\n  deployment_id: x\n":                     "queue.deployment_id applies to the durable queue only",
		"queue:\n  durable: true\n  max_concurrency: -1\n": "queue.max_concurrency must not be negative",
	} {
		cfg, err := Parse([]byte(yaml), "os.yaml")
		if err != nil {
			t.Fatalf("%q: %v", yaml, err)
		}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yaml, err, want)
		}
	}
	// The in-process runner honours its two bounds.
	cfg, err := Parse([]byte("queue:\n  max_concurrency: 4\n  max_queue_depth: 10\n"), "os.yaml")
	if err != nil || cfg.Validate() != nil {
		t.Fatal(err, cfg.Validate())
	}
}

func TestApplyEnv_BackgroundMaxConcurrency(t *testing.T) {
	t.Parallel()
	var c Config
	env := map[string]string{"AGENTRY_BACKGROUND_MAX_CONCURRENCY": "7"}
	if err := c.ApplyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if c.Queue.MaxConcurrency != 7 {
		t.Fatalf("max_concurrency %d", c.Queue.MaxConcurrency)
	}
	env["AGENTRY_BACKGROUND_MAX_CONCURRENCY"] = "many"
	if err := c.ApplyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err == nil {
		t.Fatal("a non-number was accepted")
	}
}

// A number that is no duration (NaN, ±Inf, beyond time.Duration's ~292
// years) passed the "not negative" check and became a zero, negative or
// implementation-specific duration at start.
func TestValidate_SecondsSettingsMustBeDurations(t *testing.T) {
	t.Parallel()
	agent := "agents: [{id: a, model: 'openai:x', cache_results: true, %s}]\n"
	for yaml, want := range map[string]string{
		"queue: {durable: true, poll_interval: .nan}":                                                     "queue.poll_interval",
		"queue: {durable: true, retry_delay_seconds: 1e300}":                                              "queue.retry_delay_seconds",
		"queue: {durable: true, timeout_seconds: .inf}":                                                   "queue.timeout_seconds",
		"queue: {durable: true, lock_grace_seconds: 1e10}":                                                "queue.lock_grace_seconds",
		"queue: {durable: true, retention_seconds: .nan}":                                                 "queue.retention_seconds",
		"queue: {durable: true}\nschedules: {enabled: true, poll_interval: .inf}":                         "schedules.poll_interval",
		"queue: {durable: true}\nschedules: {enabled: true, catch_up: skip, misfire_grace_seconds: .nan}": "schedules.misfire_grace_seconds",
		"tracing: {store: true, retention_days: 1e9}":                                                     "tracing.retention_days",
		"tracing: {store: true, retention_days: .nan}":                                                    "tracing.retention_days",
		strings.ReplaceAll(agent, "%s", "cache_ttl: .nan"):                                                "agents[0]: cache_ttl",
		strings.ReplaceAll(agent, "%s", "retries: 1, delay_between_retries: .inf"):                        "agents[0]: delay_between_retries",
		"knowledge: {fetch_timeout: .nan}":                                                                "knowledge.fetch_timeout",
	} {
		cfg, err := Parse([]byte(yaml), "os.yaml")
		if err != nil {
			t.Fatalf("%q: %v", yaml, err)
		}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error naming %s", yaml, err, want)
		}
	}
}

// The variable was read with fmt.Sscan, which stops at the first non-digit:
// "5abc" and "5 6" became 5 and "0x10" 16 where AGENTRY_PORT's "5abc" is an error.
func TestApplyEnv_BackgroundMaxConcurrencyIsWholeNumber(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"5abc", "5 6", "0x10", "1e3", "-3", "0"} {
		var c Config
		err := c.ApplyEnv(func(k string) (string, bool) {
			if k == "AGENTRY_BACKGROUND_MAX_CONCURRENCY" {
				return v, true
			}
			return "", false
		})
		if err == nil || !strings.Contains(err.Error(), "AGENTRY_BACKGROUND_MAX_CONCURRENCY") {
			t.Errorf("%q: %v (max_concurrency %d), want an error naming the variable", v, err, c.Queue.MaxConcurrency)
		}
	}
}

// tracing.queue_size is a channel's buffer, allocated at start: 1e12 ended
// `agentry serve` with "fatal error: runtime: out of memory".
func TestValidate_TracingQueueSizeIsBounded(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("tracing: {store: true, queue_size: 1000000000000}\n"), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "tracing.queue_size") {
		t.Fatalf("%v", err)
	}
	cfg, err = Parse([]byte("tracing: {store: true, queue_size: 1000000}\n"), "os.yaml")
	if err != nil || cfg.Validate() != nil {
		t.Fatal(err, cfg.Validate())
	}
}

// River takes at most 10,000 workers a queue: a larger durable
// max_concurrency failed at start naming River's "workers", not the key.
func TestValidate_DurableMaxConcurrencyBound(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("queue: {durable: true, max_concurrency: 10001}\n"), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "queue.max_concurrency 10001") {
		t.Fatalf("%v", err)
	}
	cfg, err = Parse([]byte("queue: {durable: true, max_concurrency: 10000}\n"), "os.yaml")
	if err != nil || cfg.Validate() != nil {
		t.Fatal(err, cfg.Validate())
	}
}
