package config

import "time"

// Tracing configures the traces the server keeps for the /traces routes.
// In YAML:
//
//	tracing:
//	  store: true          # write run, model, tool, CodeMode and retrieval spans to the database
//	  retention_days: 30   # delete stored traces older than this (0 or absent: keep them, as Agno)
//	  queue_size: 2048     # spans waiting to be written; when full, spans are dropped (and counted), never waited on
//
// Exporting spans to a collector is configured apart, by the standard
// OTEL_* environment variables (OTEL_EXPORTER_OTLP_ENDPOINT, …); both can
// be on. Storing needs a SQL database (sqlite, postgres, mysql): it is
// refused at start on another.
type Tracing struct {
	Store         bool    `yaml:"store"`
	RetentionDays float64 `yaml:"retention_days"`
	QueueSize     int     `yaml:"queue_size"`
}

// Retention is retention_days as a duration (0: keep forever).
func (t Tracing) Retention() time.Duration {
	return time.Duration(t.RetentionDays * float64(24*time.Hour))
}

func (t Tracing) validate(bad func(string, ...any)) {
	if t.RetentionDays < 0 {
		bad("tracing.retention_days must not be negative")
	}
	if t.QueueSize < 0 {
		bad("tracing.queue_size must not be negative")
	}
	if !t.Store && (t.RetentionDays != 0 || t.QueueSize != 0) {
		bad("tracing.retention_days and tracing.queue_size apply to stored traces: set tracing.store: true (or remove them)")
	}
}
