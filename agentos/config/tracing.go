package config

import (
	"math"
	"time"
)

// Tracing configures the traces the server keeps for the /traces routes.
// In YAML:
//
//	tracing:
//	  store: true          # write run, model, tool, CodeMode and retrieval spans to the database
//	  retention_days: 30   # delete stored traces older than this (0 or absent: keep them, as Agno)
//	  queue_size: 2048     # spans waiting to be written; when full, spans are dropped (and counted), never waited on
//	  capture_content: false   # keep prompts, answers, tool arguments and results out of spans (default true, as Agno)
//	  max_content_bytes: 8192  # cap on each recorded text (default 8192); a longer one ends "…[truncated: N of M bytes]"
//
// Exporting spans to a collector is configured apart, by the standard
// OTEL_* environment variables (OTEL_EXPORTER_OTLP_ENDPOINT, …); both can
// be on. Storing needs a SQL database (sqlite, postgres, mysql): it is
// refused at start on another. capture_content and max_content_bytes apply
// to every span, stored and exported alike: text left out of a span never
// reaches either.
type Tracing struct {
	Store         bool    `yaml:"store"`
	RetentionDays float64 `yaml:"retention_days"`
	QueueSize     int     `yaml:"queue_size"`
	// CaptureContent: nil (absent) records content, as Agno does.
	CaptureContent  *bool `yaml:"capture_content"`
	MaxContentBytes int   `yaml:"max_content_bytes"`
}

// MaxTraceQueueSize bounds tracing.queue_size, a buffer allocated at start.
const MaxTraceQueueSize = 1_000_000

// ContentOmitted reports whether capture_content is false.
func (t Tracing) ContentOmitted() bool { return t.CaptureContent != nil && !*t.CaptureContent }

// Retention is retention_days as a duration (0: keep forever).
func (t Tracing) Retention() time.Duration {
	return time.Duration(t.RetentionDays * float64(24*time.Hour))
}

func (t Tracing) validate(bad func(string, ...any)) {
	if t.RetentionDays < 0 {
		bad("tracing.retention_days must not be negative")
	} else if !durationOK(t.RetentionDays, 24*time.Hour) {
		bad("tracing.retention_days %v: use a number of days from 0 to %d", t.RetentionDays, int64(math.MaxInt64/(24*time.Hour)))
	}
	if t.QueueSize < 0 {
		bad("tracing.queue_size must not be negative")
	} else if t.QueueSize > MaxTraceQueueSize {
		// The queue is a buffer allocated at start: 1e12 ran out of memory.
		bad("tracing.queue_size %d is more than %d", t.QueueSize, MaxTraceQueueSize)
	}
	if t.MaxContentBytes < 0 {
		bad("tracing.max_content_bytes must not be negative (0 or absent: 8192)")
	}
	if t.ContentOmitted() && t.MaxContentBytes != 0 {
		bad("tracing.max_content_bytes caps recorded content, and tracing.capture_content is false: remove one")
	}
	if !t.Store && (t.RetentionDays != 0 || t.QueueSize != 0) {
		bad("tracing.retention_days and tracing.queue_size apply to stored traces: set tracing.store: true (or remove them)")
	}
}
