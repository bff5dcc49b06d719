package migrate

import (
	"fmt"
	"strings"
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
)

// versioned lists the kinds the Manager versions, in the order steps run.
var versioned = []string{KindSessions, KindMemories, KindMetrics, KindEvals, KindKnowledge}

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
	}
	return ""
}

// requiredColumns are the columns every known version of a table has; a table
// lacking one matches no known layout.
var requiredColumns = map[string][]string{
	KindSessions:  {"session_id", "session_type", "created_at"},
	KindRuns:      {"run_id", "session_id", "run_type", "run_data", "run_index"},
	KindMemories:  {"memory_id", "memory"},
	KindMetrics:   {"id", "date", "aggregation_period"},
	KindEvals:     {"run_id", "eval_type"},
	KindKnowledge: {"id", "name"},
}

// col is one column of a 3.0 table: kind is key, str, text, json, bigint, bool,
// date or float.
type col struct {
	name, kind string
	notNull    bool
	def        string
}

func (d Dialect) colType(kind string) string {
	switch kind {
	case "key":
		return d.keyType()
	case "str":
		return d.strType()
	case "text":
		return d.textType()
	case "json":
		return d.jsonType()
	case "bigint":
		return d.bigintType()
	case "bool":
		if d == SQLite {
			return "INTEGER"
		}
		return "BOOLEAN"
	case "date":
		if d == SQLite {
			return "TEXT"
		}
		return "DATE"
	case "float":
		if d == Postgres {
			return "DOUBLE PRECISION"
		}
		return "REAL"
	}
	panic("migrate: unknown column kind " + kind)
}

// tableSpec is the 3.0 layout of one table, used to create a missing table.
type tableSpec struct {
	cols    []col
	key     []string
	indexes [][]string // single or composite, non-unique
	unique  [][]string
}

var specs = map[string]tableSpec{
	KindSessions: {
		cols: []col{{"session_id", "key", true, ""}, {"session_type", "str", true, ""}, {"agent_id", "str", false, ""},
			{"team_id", "str", false, ""}, {"workflow_id", "str", false, ""}, {"user_id", "str", false, ""},
			{"session_data", "json", false, ""}, {"agent_data", "json", false, ""}, {"team_data", "json", false, ""},
			{"workflow_data", "json", false, ""}, {"metadata", "json", false, ""}, {"summary", "json", false, ""},
			{"created_at", "bigint", true, ""}, {"updated_at", "bigint", false, ""}},
		key:     []string{"session_id"},
		indexes: [][]string{{"session_type"}, {"user_id"}, {"created_at"}},
	},
	KindRuns: {
		cols: []col{{"run_id", "key", true, ""}, {"session_id", "key", true, ""}, {"run_type", "str", true, ""},
			{"agent_id", "str", false, ""}, {"team_id", "str", false, ""}, {"workflow_id", "str", false, ""},
			{"user_id", "str", false, ""}, {"parent_run_id", "str", false, ""}, {"status", "str", false, ""},
			{"run_index", "bigint", false, ""}, {"run_data", "json", true, ""}, {"created_at", "bigint", true, ""},
			{"updated_at", "bigint", false, ""}},
		key: []string{"run_id"},
		indexes: [][]string{{"session_id"}, {"run_type"}, {"agent_id"}, {"team_id"}, {"workflow_id"}, {"user_id"},
			{"status"}, {"created_at"}, {"session_id", "run_index"}},
	},
	KindMemories: {
		cols: []col{{"memory_id", "key", true, ""}, {"memory", "json", true, ""}, {"feedback", "text", false, ""},
			{"input", "text", false, ""}, {"agent_id", "str", false, ""}, {"team_id", "str", false, ""},
			{"user_id", "str", false, ""}, {"topics", "json", false, ""}, {"created_at", "bigint", false, ""},
			{"updated_at", "bigint", false, ""}},
		key:     []string{"memory_id"},
		indexes: [][]string{{"user_id"}, {"created_at"}, {"updated_at"}},
	},
	KindMetrics: {
		cols: []col{{"id", "key", true, ""}, {"agent_runs_count", "bigint", false, "0"}, {"team_runs_count", "bigint", false, "0"},
			{"workflow_runs_count", "bigint", false, "0"}, {"agent_sessions_count", "bigint", false, "0"},
			{"team_sessions_count", "bigint", false, "0"}, {"workflow_sessions_count", "bigint", false, "0"},
			{"users_count", "bigint", false, "0"}, {"token_metrics", "json", false, ""}, {"model_metrics", "json", false, ""},
			{"date", "date", true, ""}, {"aggregation_period", "str", true, ""}, {"created_at", "bigint", false, ""},
			{"updated_at", "bigint", false, ""}, {"completed", "bool", false, ""}, {"user_id", "key", true, "''"}},
		key:     []string{"id"},
		indexes: [][]string{{"user_id"}},
		unique:  [][]string{{"user_id", "date", "aggregation_period"}},
	},
	KindEvals: {
		cols: []col{{"run_id", "key", true, ""}, {"eval_type", "str", true, ""}, {"eval_data", "json", false, ""},
			{"eval_input", "json", false, ""}, {"name", "str", false, ""}, {"agent_id", "str", false, ""},
			{"team_id", "str", false, ""}, {"workflow_id", "str", false, ""}, {"model_id", "str", false, ""},
			{"model_provider", "str", false, ""}, {"evaluated_component_name", "str", false, ""},
			{"created_at", "bigint", false, ""}, {"updated_at", "bigint", false, ""}, {"user_id", "str", false, ""}},
		key:     []string{"run_id"},
		indexes: [][]string{{"user_id"}},
	},
	KindKnowledge: {
		cols: []col{{"id", "key", true, ""}, {"name", "str", false, ""}, {"description", "text", false, ""},
			{"metadata", "json", false, ""}, {"type", "str", false, ""}, {"size", "bigint", false, ""},
			{"linked_to", "str", false, ""}, {"access_count", "bigint", false, ""}, {"status", "str", false, ""},
			{"status_message", "text", false, ""}, {"created_at", "bigint", false, ""}, {"updated_at", "bigint", false, ""},
			{"external_id", "str", false, ""}, {"user_id", "str", false, ""}},
		key:     []string{"id"},
		indexes: [][]string{{"user_id"}},
	},
}

// indexName is the name of an index over cols of table.
func indexName(table string, cols []string, unique bool) string {
	p := "idx_"
	if unique {
		p = "uq_"
	}
	return p + table + "_" + strings.Join(cols, "_")
}

// createTableSQL returns the statements that create a 3.0 table and its
// indexes; fk, when set, is the qualified sessions table runs refer to.
func (m *Manager) createTableSQL(kind, table, fk string) []string {
	d := m.cfg.Dialect
	s := specs[kind]
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (", m.qualify(table))
	for i, c := range s.cols {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", d.quote(c.name), d.colType(c.kind))
		if c.notNull {
			b.WriteString(" NOT NULL")
		}
		if c.def != "" {
			b.WriteString(" DEFAULT " + c.def)
		}
	}
	fmt.Fprintf(&b, ", PRIMARY KEY (%s)", m.quoteList(s.key))
	if fk != "" {
		fmt.Fprintf(&b, ", FOREIGN KEY (%s) REFERENCES %s (%s) ON DELETE CASCADE", d.quote("session_id"), fk, d.quote("session_id"))
	}
	b.WriteString(")")
	if d == MySQL {
		b.WriteString(" DEFAULT CHARSET=utf8mb4")
	}
	stmts := []string{b.String()}
	for _, ix := range s.indexes {
		stmts = append(stmts, m.createIndexSQL(table, ix, false))
	}
	for _, ix := range s.unique {
		stmts = append(stmts, m.createIndexSQL(table, ix, true))
	}
	return stmts
}

func (m *Manager) createIndexSQL(table string, cols []string, unique bool) string {
	u := ""
	if unique {
		u = "UNIQUE "
	}
	return fmt.Sprintf("CREATE %sINDEX %s ON %s (%s)", u, m.cfg.Dialect.quote(indexName(table, cols, unique)), m.qualify(table), m.quoteList(cols))
}

func (m *Manager) quoteList(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = m.cfg.Dialect.quote(c)
	}
	return strings.Join(q, ", ")
}
