package db

import "database/sql"

// SQLBacked is the optional ability of a SQL driver to lend its database to
// schema tools (the migrate package) while the store stays open. The memory
// driver has no such ability.
type SQLBacked interface {
	// SQLTarget returns a connection pool on the store's database. The
	// caller calls Release when done.
	SQLTarget() (SQLTarget, error)
}

// SQLTarget is a SQL database as a schema tool sees it. The dialect and the
// table names come from the store itself (internal/sqlstore), which the
// migrate package reads.
type SQLTarget struct {
	// DB serves the tool; it allows several connections at once (a migration
	// holds a lock, a reader and a writer).
	DB      *sql.DB
	Release func()
	// ReadOnly reports a store opened read-only: DB refuses writes.
	ReadOnly bool
}
