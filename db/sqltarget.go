package db

import "database/sql"

// SQLBacked is the optional ability of a SQL driver to lend its database to
// schema tools (the migrate package) while the store stays open. The memory
// driver has no such ability.
type SQLBacked interface {
	// SQLTarget returns a connection pool on the store's database and its
	// layout. The caller calls Release when done.
	SQLTarget() (SQLTarget, error)
}

// SQLTarget is a SQL database as a schema tool sees it.
type SQLTarget struct {
	// DB serves the tool; it allows several connections at once (a migration
	// holds a lock, a reader and a writer).
	DB      *sql.DB
	Release func()
	// Dialect is "sqlite", "postgres" or "mysql"; Schema is the Postgres
	// schema holding the tables.
	Dialect string
	Schema  string
	// Tables maps each table kind ("sessions", "runs", "memories",
	// "metrics", "evals", "knowledge", "versions", "tool_results", "fs") to
	// the name the store uses.
	Tables map[string]string
	// ReadOnly reports a store opened read-only: DB refuses writes.
	ReadOnly bool
}
