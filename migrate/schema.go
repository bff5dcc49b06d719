package migrate

import (
	"strings"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

// Known schema versions, oldest first. A table without a row in the versions
// table is at the first one.
var Versions = []string{"2.0.0", "2.3.0", "2.5.0", "2.5.6", "3.0.0"}

// Latest is the newest schema version.
const Latest = "3.0.0"

// versionIndex returns v's position in Versions, or -1.
func versionIndex(v string) int {
	for i, k := range Versions {
		if k == v {
			return i
		}
	}
	return -1
}

// Tables names the tables the Manager works on. Empty fields take the Agno
// defaults; Runs defaults to "agno_runs", or "{Sessions}_runs" when Sessions is
// renamed.
type Tables struct {
	Sessions  string
	Runs      string
	Memories  string
	Metrics   string
	Evals     string
	Knowledge string
	// ToolResults and FS are created at 3.0.0 when missing.
	ToolResults string
	FS          string
	// Versions is agno_schema_versions.
	Versions string
	// Errors records rows the 2.x→3.0 copy could not migrate
	// (agno_migration_errors).
	Errors string
	// Progress holds the copy's resume checkpoint (agno_migration_progress).
	Progress string
}

func (t Tables) withDefaults() Tables {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	if t.Runs == "" {
		if t.Sessions == "" || t.Sessions == "agno_sessions" {
			t.Runs = "agno_runs"
		} else {
			t.Runs = t.Sessions + "_runs"
		}
	}
	def(&t.Sessions, "agno_sessions")
	def(&t.Memories, "agno_memories")
	def(&t.Metrics, "agno_metrics")
	def(&t.Evals, "agno_eval_runs")
	def(&t.Knowledge, "agno_knowledge")
	def(&t.ToolResults, "agno_tool_results")
	def(&t.FS, "agno_fs")
	def(&t.Versions, "agno_schema_versions")
	def(&t.Errors, "agno_migration_errors")
	def(&t.Progress, "agno_migration_progress")
	return t
}

// Table kinds: what a table is for, independent of its configured name.
const (
	KindSessions  = "sessions"
	KindRuns      = "runs"
	KindMemories  = "memories"
	KindMetrics   = "metrics"
	KindEvals     = "evals"
	KindKnowledge = "knowledge"
	// Tables added in 3.0: created when missing, never stepped.
	KindToolResults = "tool_results"
	KindFS          = "fs"
)

// versioned lists the kinds the Manager versions, in the order steps run.
var versioned = []string{KindSessions, KindMemories, KindMetrics, KindEvals, KindKnowledge, KindToolResults, KindFS}

func (t Tables) name(kind string) string {
	switch kind {
	case KindSessions:
		return t.Sessions
	case KindRuns:
		return t.Runs
	case KindMemories:
		return t.Memories
	case KindMetrics:
		return t.Metrics
	case KindEvals:
		return t.Evals
	case KindKnowledge:
		return t.Knowledge
	case KindToolResults:
		return t.ToolResults
	case KindFS:
		return t.FS
	}
	return ""
}

// requiredColumns are the columns every known version of a table has; a table
// lacking one matches no known layout.
var requiredColumns = map[string][]string{
	KindSessions:    {"session_id", "session_type", "created_at"},
	KindRuns:        {"run_id", "session_id", "run_type", "run_data", "run_index"},
	KindMemories:    {"memory_id", "memory"},
	KindMetrics:     {"id", "date", "aggregation_period"},
	KindEvals:       {"run_id", "eval_type"},
	KindKnowledge:   {"id", "name"},
	KindToolResults: {"result_id", "namespace", "path"},
	KindFS:          {"namespace", "path", "content"},
}

// storeTables converts to the storage layer's names, whose DDL creates tables.
func (t Tables) storeTables() sqlstore.Tables {
	return sqlstore.Tables{Sessions: t.Sessions, Runs: t.Runs, Memories: t.Memories, Metrics: t.Metrics, Evals: t.Evals,
		Knowledge: t.Knowledge, Versions: t.Versions, ToolResults: t.ToolResults, FS: t.FS}
}

// indexName is the name the storage layer's DDL gives an index over cols.
func indexName(table string, cols []string) string {
	return "idx_" + table + "_" + strings.Join(cols, "_")
}

// metricsUnique is the name of metrics' 3.0 unique (user_id, date, aggregation_period).
func metricsUnique(table string) string { return "uq_" + table + "_user_date_period" }
