package migratetest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db/postgres"
)

// Layout says which 2.x database to build.
type Layout struct {
	// Dialect is "sqlite", "postgres" or "mysql".
	Dialect string
	// Schema holds the tables on Postgres (default postgres.DefaultSchema).
	Schema string
	// JSONType is the Postgres JSON column type: "jsonb" (default, 2.3.0 and
	// later) or "json" (older 2.x tables).
	JSONType string
	// Stamp, when set, stamps every table at that version in
	// agno_schema_versions (e.g. "2.5.6"); empty builds 2.0.0-era tables
	// without version rows (and, on Postgres/MySQL, session_id as a unique
	// constraint rather than the primary key, as before 2.5.0).
	Stamp string
	// SessionsTable defaults to agno_sessions.
	SessionsTable string
}

func (l Layout) withDefaults() Layout {
	if l.Schema == "" {
		l.Schema = postgres.DefaultSchema
	}
	if l.JSONType == "" {
		l.JSONType = "jsonb"
	}
	if l.SessionsTable == "" {
		l.SessionsTable = "agno_sessions"
	}
	return l
}

func (l Layout) table(name string) string {
	if l.Dialect == "postgres" {
		return `"` + l.Schema + `"."` + name + `"`
	}
	if l.Dialect == "mysql" {
		return "`" + name + "`"
	}
	return `"` + name + `"`
}

func (l Layout) types() (key, str, text, js, bigint string) {
	switch l.Dialect {
	case "postgres":
		return "VARCHAR", "VARCHAR", "TEXT", strings.ToUpper(l.JSONType), "BIGINT"
	case "mysql":
		return "VARCHAR(128)", "VARCHAR(255)", "TEXT", "JSON", "BIGINT"
	}
	return "VARCHAR", "VARCHAR", "TEXT", "JSON", "BIGINT" // SQLAlchemy's names; SQLite stores them as text
}

// Create builds the 2.x tables: sessions (with the runs column), memories,
// metrics, eval runs and knowledge, and the versions table when Stamp is set.
func Create(ctx context.Context, db *sql.DB, l Layout) error {
	l = l.withDefaults()
	key, str, text, js, bigint := l.types()
	pre25 := l.Stamp == "" || l.Stamp < "2.5.0"
	pre23 := l.Stamp == "" || l.Stamp < "2.3.0"
	sessKey := "PRIMARY KEY (session_id)"
	if pre25 && l.Dialect != "sqlite" {
		sessKey = fmt.Sprintf("CONSTRAINT %s_uq_session_id UNIQUE (session_id)", l.SessionsTable)
	}
	charset := ""
	if l.Dialect == "mysql" {
		charset = " DEFAULT CHARSET=utf8mb4"
	}
	memCols := ""
	if !pre23 {
		memCols = fmt.Sprintf(", feedback %s, created_at %s", text, bigint)
	}
	stmts := []string{
		fmt.Sprintf(`CREATE TABLE %s (session_id %s NOT NULL, session_type %s NOT NULL, agent_id %s, team_id %s, workflow_id %s, user_id %s,
session_data %s, agent_data %s, team_data %s, workflow_data %s, metadata %s, runs %s, summary %s, created_at %s NOT NULL, updated_at %s, %s)%s`,
			l.table(l.SessionsTable), key, str, str, str, str, str, js, js, js, js, js, js, js, bigint, bigint, sessKey, charset),
		fmt.Sprintf(`CREATE TABLE %s (memory_id %s NOT NULL PRIMARY KEY, memory %s NOT NULL, input %s, agent_id %s, team_id %s, user_id %s, topics %s, updated_at %s%s)%s`,
			l.table("agno_memories"), key, js, text, str, str, str, js, bigint, memCols, charset),
		fmt.Sprintf(`CREATE TABLE %s (id %s NOT NULL PRIMARY KEY, agent_runs_count %s, team_runs_count %s, workflow_runs_count %s, agent_sessions_count %s,
team_sessions_count %s, workflow_sessions_count %s, users_count %s, token_metrics %s, model_metrics %s, %s DATE NOT NULL, aggregation_period %s NOT NULL,
created_at %s, updated_at %s, completed BOOLEAN)%s`,
			l.table("agno_metrics"), key, bigint, bigint, bigint, bigint, bigint, bigint, bigint, js, js, quote(l, "date"), str, bigint, bigint, charset),
		fmt.Sprintf(`CREATE TABLE %s (run_id %s NOT NULL PRIMARY KEY, eval_type %s NOT NULL, eval_data %s, eval_input %s, name %s, agent_id %s, team_id %s,
workflow_id %s, model_id %s, model_provider %s, evaluated_component_name %s, created_at %s, updated_at %s)%s`,
			l.table("agno_eval_runs"), key, str, js, js, str, str, str, str, str, str, str, bigint, bigint, charset),
		fmt.Sprintf(`CREATE TABLE %s (id %s NOT NULL PRIMARY KEY, name %s, description %s, metadata %s, type %s, size %s, linked_to %s, access_count %s,
status %s, status_message %s, created_at %s, updated_at %s, external_id %s)%s`,
			l.table("agno_knowledge"), key, str, text, js, str, bigint, str, bigint, str, text, bigint, bigint, str, charset),
	}
	if l.Dialect == "postgres" {
		stmts = append([]string{`CREATE SCHEMA IF NOT EXISTS "` + l.Schema + `"`}, stmts...)
	}
	if l.Stamp != "" {
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE %s (table_name %s NOT NULL PRIMARY KEY, version %s NOT NULL, created_at %s, updated_at %s)%s",
			l.table("agno_schema_versions"), key, str, str, str, charset))
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("migratetest: %w\n%s", err, s)
		}
	}
	if l.Stamp != "" {
		now := time.Unix(1700000000, 0).UTC().Format(time.RFC3339)
		for _, t := range []string{l.SessionsTable, "agno_memories", "agno_metrics", "agno_eval_runs", "agno_knowledge"} {
			q := rebind(l, "INSERT INTO "+l.table("agno_schema_versions")+" (table_name, version, created_at, updated_at) VALUES (?, ?, ?, ?)")
			if _, err := db.ExecContext(ctx, q, t, l.Stamp, now, now); err != nil {
				return fmt.Errorf("migratetest: stamp %s: %w", t, err)
			}
		}
	}
	return nil
}

func quote(l Layout, name string) string {
	if l.Dialect == "mysql" {
		return "`" + name + "`"
	}
	return `"` + name + `"`
}

func rebind(l Layout, q string) string {
	if l.Dialect != "postgres" {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}
