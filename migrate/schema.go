package migrate

import (
	"slices"
	"strings"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

// Known schema versions, oldest first. A table without a row in the versions
// table is at the first one.
var Versions = slices.Clone(sqlstore.KnownVersions)

// Latest is the newest schema version.
const Latest = sqlstore.Version30

// versionIndex returns v's position in Versions, or -1.
func versionIndex(v string) int {
	for i, k := range Versions {
		if k == v {
			return i
		}
	}
	return -1
}

// Tables names the tables the Manager works on (the storage layer's type:
// the drivers name the same tables with it). Empty fields take the Agno
// defaults; Runs defaults to "agno_runs", or "{Sessions}_runs" when Sessions
// is renamed.
type Tables = sqlstore.Tables

// Table kinds: what a table is for, independent of its configured name (the
// storage layer's kinds).
const (
	KindSessions  = sqlstore.KindSessions
	KindRuns      = sqlstore.KindRuns
	KindMemories  = sqlstore.KindMemories
	KindMetrics   = sqlstore.KindMetrics
	KindEvals     = sqlstore.KindEvals
	KindKnowledge = sqlstore.KindKnowledge
	// KindLearnings existed in 2.x with the 3.0 columns; its 3.0.0 step
	// re-keys namespace "user" entity memory (see LearningsRekey).
	KindLearnings = sqlstore.KindLearnings
	// Tables added in 3.0: created when missing, never stepped.
	KindToolResults = sqlstore.KindToolResults
	KindFS          = sqlstore.KindFS
	KindRunSteps    = sqlstore.KindRunSteps
	KindApprovals   = sqlstore.KindApprovals
	// Schedules (3.0): created when missing, never stepped.
	KindSchedules    = sqlstore.KindSchedules
	KindScheduleRuns = sqlstore.KindScheduleRuns
	// The component registry.
	KindComponents       = sqlstore.KindComponents
	KindComponentConfigs = sqlstore.KindComponentConfigs
	KindComponentLinks   = sqlstore.KindComponentLinks
)

// versioned lists the kinds the Manager versions, in the order steps run.
var versioned = []string{KindSessions, KindMemories, KindMetrics, KindEvals, KindKnowledge, KindLearnings, KindToolResults, KindFS, KindRunSteps, KindApprovals,
	KindSchedules, KindScheduleRuns, KindComponents, KindComponentConfigs, KindComponentLinks}

// requiredColumns are the columns every known version of a table has; a table
// lacking one matches no known layout.
var requiredColumns = map[string][]string{
	KindSessions:         {"session_id", "session_type", "created_at"},
	KindRuns:             {"run_id", "session_id", "run_type", "run_data", "run_index"},
	KindMemories:         {"memory_id", "memory"},
	KindMetrics:          {"id", "date", "aggregation_period"},
	KindEvals:            {"run_id", "eval_type"},
	KindKnowledge:        {"id", "name"},
	KindLearnings:        {"learning_id", "learning_type", "content"},
	KindToolResults:      {"result_id", "namespace", "path"},
	KindFS:               {"namespace", "path", "content"},
	KindRunSteps:         {"run_id", "step_key", "attempt"},
	KindApprovals:        {"id", "run_id", "status"},
	KindSchedules:        {"id", "name", "cron_expr"},
	KindScheduleRuns:     {"id", "schedule_id", "status"},
	KindComponents:       {"component_id", "component_type"},
	KindComponentConfigs: {"component_id", "version", "config"},
	KindComponentLinks:   {"parent_component_id", "parent_version", "child_component_id"},
}

// indexName is the name the storage layer's DDL gives an index over cols.
func indexName(table string, cols []string) string {
	return "idx_" + table + "_" + strings.Join(cols, "_")
}

// metricsUnique is the name of metrics' 3.0 unique (user_id, date, aggregation_period).
func metricsUnique(table string) string { return "uq_" + table + "_user_date_period" }
