package sqlstore

import (
	"strings"

	"github.com/agentryhq/agentry/db"
)

// Table kinds: the keys of the DDL sections and of Tables.
const (
	KindSessions    = "sessions"
	KindRuns        = "runs"
	KindMemories    = "memories"
	KindMetrics     = "metrics"
	KindEvals       = "evals"
	KindKnowledge   = "knowledge"
	KindVersions    = "versions"
	KindToolResults = "tool_results"
	KindFS          = "fs"
	// KindRunSteps is Agentry's step journal of durable runs
	// (agentry_run_steps; Agno readers ignore it).
	KindRunSteps  = "run_steps"
	KindLearnings = "learnings"
	KindApprovals = "approvals"
	// KindTraces and KindSpans are Agno 3.0's stored traces (agno_traces,
	// agno_spans), created at 3.0.0 when missing.
	KindTraces = "traces"
	KindSpans  = "spans"
	// KindSchedules and KindScheduleRuns are Agno 3.0's cron schedules
	// (agno_schedules) and their firings (agno_schedule_runs).
	KindSchedules    = "schedules"
	KindScheduleRuns = "schedule_runs"
	// The component registry (Agno 3.0's agno_components,
	// agno_component_configs, agno_component_links), created when missing.
	KindComponents       = "components"
	KindComponentConfigs = "component_configs"
	KindComponentLinks   = "component_links"
)

// Kinds lists every table kind in creation order (sessions before runs, for the
// foreign key).
var Kinds = []string{KindSessions, KindRuns, KindMemories, KindMetrics, KindEvals,
	KindKnowledge, KindVersions, KindToolResults, KindFS, KindRunSteps, KindLearnings, KindApprovals,
	KindTraces, KindSpans, KindSchedules, KindScheduleRuns, KindComponents, KindComponentConfigs, KindComponentLinks}

// DefaultSessionsTable is Agno's sessions table name.
const DefaultSessionsTable = "agno_sessions"

// Tables names the tables: the one type the drivers, the store and migrate
// share. Zero fields take Agno's defaults; Runs defaults to agno_runs, or
// "{Sessions}_runs" when Sessions is renamed (as Agno 3.0 does).
type Tables struct {
	Sessions  string
	Runs      string
	Memories  string
	Metrics   string
	Evals     string
	Knowledge string
	// Versions is agno_schema_versions.
	Versions string
	// ToolResults and FS are created at 3.0.0 when missing.
	ToolResults string
	FS          string
	// RunSteps is the step journal (agentry_run_steps), created at 3.0.0
	// when missing.
	RunSteps string
	// Learnings is agno_learnings (entity memory, user profiles, …); it is
	// created when missing, as Agno creates it on first use.
	Learnings string
	// Approvals is Agno 3.0's review queue (agno_approvals), created at
	// 3.0.0 when missing.
	Approvals string
	// Traces and Spans are agno_traces and agno_spans (the /traces routes).
	Traces string
	Spans  string
	// Schedules and ScheduleRuns are agno_schedules and agno_schedule_runs,
	// created at 3.0.0 when missing.
	Schedules    string
	ScheduleRuns string
	// Components, ComponentConfigs and ComponentLinks are the component
	// registry, created at 3.0.0 when missing.
	Components       string
	ComponentConfigs string
	ComponentLinks   string
	// Errors records rows the 2.x→3.0 copy could not migrate
	// (agno_migration_errors); migrate creates it.
	Errors string
	// Progress holds the copy's resume checkpoint (agno_migration_progress);
	// migrate creates it.
	Progress string
	// CopiedRuns records, per run the 2.x→3.0 copy wrote, a digest of the
	// legacy element it copied and the updated_at it gave the row
	// (agno_migration_copied_runs), so a later copy can tell a run a 2.x
	// process changed from one Agentry changed; migrate creates it.
	CopiedRuns string
}

// WithDefaults fills empty names.
func (t Tables) WithDefaults() Tables {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&t.Sessions, DefaultSessionsTable)
	if t.Sessions != DefaultSessionsTable {
		def(&t.Runs, t.Sessions+"_runs")
	}
	def(&t.Runs, "agno_runs")
	def(&t.Memories, "agno_memories")
	def(&t.Metrics, "agno_metrics")
	def(&t.Evals, "agno_eval_runs")
	def(&t.Knowledge, "agno_knowledge")
	def(&t.Versions, "agno_schema_versions")
	def(&t.ToolResults, "agno_tool_results")
	def(&t.FS, "agno_fs")
	def(&t.RunSteps, "agentry_run_steps")
	def(&t.Learnings, "agno_learnings")
	def(&t.Approvals, "agno_approvals")
	def(&t.Traces, "agno_traces")
	def(&t.Spans, "agno_spans")
	def(&t.Schedules, "agno_schedules")
	def(&t.ScheduleRuns, "agno_schedule_runs")
	def(&t.Components, "agno_components")
	def(&t.ComponentConfigs, "agno_component_configs")
	def(&t.ComponentLinks, "agno_component_links")
	def(&t.Errors, "agno_migration_errors")
	def(&t.Progress, "agno_migration_progress")
	def(&t.CopiedRuns, "agno_migration_copied_runs")
	return t
}

// Name returns the table name for a kind ("" for an unknown kind).
func (t Tables) Name(kind string) string {
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
	case KindVersions:
		return t.Versions
	case KindToolResults:
		return t.ToolResults
	case KindFS:
		return t.FS
	case KindRunSteps:
		return t.RunSteps
	case KindLearnings:
		return t.Learnings
	case KindApprovals:
		return t.Approvals
	case KindTraces:
		return t.Traces
	case KindSpans:
		return t.Spans
	case KindSchedules:
		return t.Schedules
	case KindScheduleRuns:
		return t.ScheduleRuns
	case KindComponents:
		return t.Components
	case KindComponentConfigs:
		return t.ComponentConfigs
	case KindComponentLinks:
		return t.ComponentLinks
	}
	return ""
}

// columns30 are the 3.0.0 columns of each table, in DDL order.
var columns30 = map[string][]string{
	KindSessions: split("session_id session_type agent_id team_id workflow_id user_id session_data agent_data team_data workflow_data metadata summary created_at updated_at"),
	KindRuns:     split("run_id session_id run_type agent_id team_id workflow_id user_id parent_run_id status run_index run_data created_at updated_at"),
	KindMemories: split("memory_id memory feedback input agent_id team_id user_id topics created_at updated_at"),
	KindMetrics: split("id agent_runs_count team_runs_count workflow_runs_count agent_sessions_count team_sessions_count workflow_sessions_count users_count " +
		"token_metrics model_metrics date aggregation_period created_at updated_at completed user_id"),
	KindEvals:     split("run_id eval_type eval_data eval_input name agent_id team_id workflow_id model_id model_provider evaluated_component_name created_at updated_at user_id"),
	KindKnowledge: split("id name description metadata type size linked_to access_count status status_message created_at updated_at external_id user_id"),
	KindVersions:  split("table_name version created_at updated_at"),
	KindToolResults: split("result_id namespace path session_id run_id tool_call_id tool_name args_hash content_type size_bytes line_count preview user_id " +
		"created_at expires_at"),
	KindFS:       split("namespace path content size_bytes version created_at updated_at"),
	KindRunSteps: split("run_id step_key kind attempt status request result created_at updated_at"),
	KindLearnings: split("learning_id learning_type namespace user_id agent_id team_id workflow_id session_id entity_id entity_type content metadata " +
		"created_at updated_at"),
	KindApprovals: split("id run_id session_id status source_type approval_type pause_type tool_name tool_args expires_at agent_id team_id " +
		"workflow_id user_id schedule_id schedule_run_id source_name requirements context resolution_data resolved_by resolved_at created_at updated_at run_status"),
	KindTraces: split("trace_id name status start_time end_time duration_ms run_id session_id user_id agent_id team_id workflow_id created_at"),
	KindSpans:  split("span_id trace_id parent_span_id name span_kind status_code status_message start_time end_time duration_ms attributes created_at"),
	KindSchedules: split("id name description method endpoint payload cron_expr timezone timeout_seconds max_retries retry_delay_seconds " +
		"enabled next_run_at locked_by locked_at user_id managed_by target_type target_id created_by_run_id created_by_session_id " +
		"updated_by_run_id updated_by_session_id disabled_reason created_at updated_at"),
	KindScheduleRuns: split("id schedule_id attempt triggered_at completed_at status status_code run_id session_id error input output " +
		"requirements user_id created_at"),
	KindComponents:       split("component_id component_type name user_id description current_version metadata created_at updated_at deleted_at"),
	KindComponentConfigs: split("component_id version label stage config notes created_at updated_at deleted_at"),
	KindComponentLinks: split("parent_component_id parent_version link_kind link_key child_component_id child_version position meta " +
		"created_at updated_at"),
}

// columnsAdded are, per known version, the columns it added to tables that
// existed before it. A table lacking only such columns is at an older known
// version (migrate steps it up); lacking anything else, at none.
var columnsAdded = map[string]map[string][]string{
	"2.3.0": {KindMemories: {"created_at", "feedback"}},
	Version30: {
		KindMetrics:   {"user_id"},
		KindEvals:     {"user_id"},
		KindKnowledge: {"user_id"},
	},
}

// ColumnsAddedIn returns the columns a version added to an existing table of
// a kind (nil when it added none).
func ColumnsAddedIn(version, kind string) []string {
	return append([]string(nil), columnsAdded[version][kind]...)
}

// addedBy returns the known version that added a column to a kind, or "".
func addedBy(kind, col string) string {
	for _, v := range KnownVersions {
		for _, c := range columnsAdded[v][kind] {
			if c == col {
				return v
			}
		}
	}
	return ""
}

// Columns30 returns the 3.0.0 column names of a table kind.
func Columns30(kind string) []string { return append([]string(nil), columns30[kind]...) }

func split(s string) []string { return strings.Fields(s) }

// CheckNames refuses table names (defaults filled in) that a server would
// not take for the tables they configure: a name holding a dot, and two
// names equal but for ASCII case. A dot is legal inside a quoted name, but
// every name is quoted as one identifier in the dialect's schema, so
// "myschema.agno_sessions" named a table the schema lacks, and new, empty
// tables were created beside the real ones. Names equal but for case are
// one table to SQLite (and to MySQL on a case-insensitive file system), so
// the runs table "agno_sessions" beside the sessions table "Agno_Sessions"
// was the sessions table; Postgres would keep them apart, but the same
// configuration must mean the same tables on every backend. The error is
// db.ErrInvalidConfig to errors.Is.
func (t Tables) CheckNames() error {
	t = t.WithDefaults()
	type named struct{ kind, name string }
	names := make([]named, 0, len(Kinds)+3)
	for _, k := range Kinds {
		names = append(names, named{k, t.Name(k)})
	}
	names = append(names, named{"migration errors", t.Errors}, named{"migration progress", t.Progress}, named{"copied runs", t.CopiedRuns})
	for i, n := range names {
		if strings.Contains(n.name, ".") {
			return db.ConfigError("%s table name %q holds a dot: a table name is one identifier; name the schema apart "+
				"(the Postgres driver's Config.Schema, postgres.Dialect(schema), the --schema flag) and the table without it", n.kind, n.name)
		}
		for _, o := range names[:i] {
			if n.name == o.name {
				return db.ConfigError("the %s and %s tables are both named %q: name each table apart", o.kind, n.kind, n.name)
			}
			if strings.EqualFold(n.name, o.name) {
				return db.ConfigError("%s table name %q and %s table name %q differ only in case (SQLite, and MySQL on a case-insensitive file system, "+
					"take them for one table): name them apart by more than case", o.kind, o.name, n.kind, n.name)
			}
		}
	}
	return nil
}
