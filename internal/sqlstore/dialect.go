package sqlstore

import (
	"fmt"
	"strconv"
	"strings"
)

// Dialect names.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
	MySQL    = "mysql"
)

// Dialect is what differs between the SQL backends: identifier quoting,
// placeholders, insert-or-ignore, JSON expressions and how run_index
// assignment is serialised. Queries are written with "?" placeholders and
// rebound for Postgres.
type Dialect struct {
	// Name is SQLite, Postgres or MySQL.
	Name string
	// Schema prefixes table names (Postgres only; empty elsewhere).
	Schema string
}

// Quote quotes one identifier.
func (d *Dialect) Quote(ident string) string {
	if d.Name == MySQL {
		return "`" + strings.ReplaceAll(ident, "`", "``") + "`"
	}
	return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"`
}

// Table returns the quoted, schema-qualified name of a table.
func (d *Dialect) Table(name string) string {
	if d.Schema != "" {
		return d.Quote(d.Schema) + "." + d.Quote(name)
	}
	return d.Quote(name)
}

// Rebind turns "?" placeholders into the dialect's ($1, $2, … on Postgres).
// Queries built here never contain a literal "?" outside placeholders.
func (d *Dialect) Rebind(q string) string {
	if d.Name != Postgres || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// InsertIgnore returns an INSERT that does nothing when the primary key
// (conflictCols) already exists; RowsAffected tells which happened.
func (d *Dialect) InsertIgnore(table string, cols []string, conflictCols ...string) string {
	ph := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
	if d.Name == MySQL {
		return fmt.Sprintf("INSERT IGNORE INTO %s (%s) VALUES (%s)", table, strings.Join(cols, ", "), ph)
	}
	return fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) DO NOTHING",
		table, strings.Join(cols, ", "), ph, strings.Join(conflictCols, ", "))
}

// jsonValue unwraps a JSON column to its value for SQL-side JSON functions.
// On SQLite it also removes one layer of Agno's double encoding.
func (d *Dialect) jsonValue(col string) string {
	if d.Name == SQLite {
		return fmt.Sprintf("(CASE WHEN json_valid(%[1]s) AND json_type(%[1]s) = 'text' THEN json_extract(%[1]s, '$') ELSE %[1]s END)", col)
	}
	return col
}

// jsonField extracts a top-level string field of a JSON object column as text.
func (d *Dialect) jsonField(col, field string) string {
	switch d.Name {
	case Postgres:
		return fmt.Sprintf("(%s->>'%s')", col, field)
	case MySQL:
		return fmt.Sprintf("JSON_UNQUOTE(JSON_EXTRACT(%s, '$.%s'))", col, field)
	}
	v := d.jsonValue(col)
	return fmt.Sprintf("(CASE WHEN json_valid(%[1]s) THEN json_extract(%[1]s, '$.%[2]s') END)", v, field)
}

// jsonString returns the text of a column holding a JSON string.
func (d *Dialect) jsonString(col string) string {
	switch d.Name {
	case Postgres:
		return fmt.Sprintf("(%s #>> '{}')", col)
	case MySQL:
		return fmt.Sprintf("JSON_UNQUOTE(%s)", col)
	}
	return fmt.Sprintf("(CASE WHEN json_valid(%[1]s) THEN json_extract(%[1]s, '$') ELSE %[1]s END)", col)
}

// jsonArrayHasAny is a condition true when the JSON array column holds any of
// n string values (bound as n placeholders).
func (d *Dialect) jsonArrayHasAny(col string, n int) string {
	ph := strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
	switch d.Name {
	case Postgres:
		return fmt.Sprintf("(jsonb_typeof(%[1]s) = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(%[1]s) AS t(v) WHERE t.v IN (%[2]s)))", col, ph)
	case MySQL:
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf("JSON_CONTAINS(%s, JSON_QUOTE(?))", col)
		}
		return "(" + strings.Join(parts, " OR ") + ")"
	}
	v := d.jsonValue(col)
	return fmt.Sprintf("(json_valid(%[1]s) AND json_type(%[1]s) = 'array' AND EXISTS (SELECT 1 FROM json_each(%[1]s) WHERE value IN (%[2]s)))", v, ph)
}

// likeContains is a case-insensitive substring condition on a text expression;
// the bound value comes from containsPattern.
func (d *Dialect) likeContains(expr string) string {
	if d.Name == MySQL {
		return fmt.Sprintf("LOWER(%s) LIKE ?", expr) // backslash is MySQL's default LIKE escape
	}
	return fmt.Sprintf("LOWER(%s) LIKE ? ESCAPE '\\'", expr)
}

// containsPattern builds the LIKE pattern for likeContains.
func containsPattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(s)) + "%"
}

// lockSession serialises run_index assignment for one session inside a
// transaction. SQLite needs nothing: its writes go through one connection in
// BEGIN IMMEDIATE transactions.
func (d *Dialect) lockSession(sessionsTable string) string {
	switch d.Name {
	case Postgres:
		return "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))"
	case MySQL:
		return "SELECT session_id FROM " + sessionsTable + " WHERE session_id = ? FOR UPDATE"
	}
	return ""
}

// noIndex wraps a text column so the planner cannot use an index on it, while
// comparisons (NULL included) keep their meaning. Queries scoped to one
// session use it on the other columns so the plan stays on the
// (session_id, run_index) index instead of the single-column ones (agent_id,
// user_id, status), which can cover a whole agent's or user's runs: SQLite
// without statistics picks agent_id's for the history. Postgres gets the
// bare column: it plans these queries well from its statistics, and an
// expression there only hides them (EXPLAIN ANALYZE on a 50,000-run session:
// the wrapped history read the whole session, 30 ms; bare, a backward index
// scan of 4 rows, 0.08 ms).
func (d *Dialect) noIndex(col string) string {
	switch d.Name {
	case SQLite:
		return "+" + col
	case MySQL:
		return "CONCAT(" + col + ", '')"
	}
	return col
}
