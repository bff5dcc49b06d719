package dsn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentryhq/agentry/db"
)

// ErrNotLinked is returned by Open for a dialect whose driver the program
// did not pass in Drivers.
var ErrNotLinked = errors.New("database driver not linked into this program")

// Options tune how a driver opens a DSN.
type Options struct {
	// ID is the db_id AgentOS reports; empty means the dialect.
	ID string
	// ReadOnly opens without writing anything: no file, schema or table is
	// created, a SQLite file keeps its journal mode, a missing SQLite file
	// is an error naming it, and a database without Agentry's tables is an
	// error (unless SkipSchemaCheck).
	ReadOnly bool
	// MustExist makes a missing SQLite file an error instead of creating it
	// (for migrations: there is nothing to migrate in a new file).
	MustExist bool
	// SkipSchemaCheck opens without checking or creating tables, for the
	// migrate package, which opens 2.x databases to inspect or upgrade them.
	SkipSchemaCheck bool
	// Schema holds the tables on Postgres; empty means "ai". Ignored elsewhere.
	Schema string
	// QueryTimeout bounds every database call (the wait for a pooled
	// connection and its statements; a config file's db.query_timeout);
	// zero means db.DefaultQueryTimeout, negative no bound.
	QueryTimeout time.Duration
	// SQLiteExclusive keeps a SQLite file to this process while it is open
	// (sqlite.Config.Exclusive; a config file's db.sqlite_exclusive). The
	// Postgres and MySQL openers refuse it.
	SQLiteExclusive bool
}

// Opener opens a parsed DSN of its driver's dialect. Each driver package
// provides one (sqlite.OpenDSN, postgres.OpenDSN, mysql.OpenDSN).
type Opener func(ctx context.Context, d DSN, o Options) (*db.DB, error)

// Drivers are the openers a program links; a nil field means the program
// does not support that dialect. There is no global registry: a program that
// passes only SQLite links only SQLite.
type Drivers struct {
	SQLite, Postgres, MySQL Opener
}

// Open opens a parsed DSN with the driver of its dialect.
func (ds Drivers) Open(ctx context.Context, d DSN, o Options) (*db.DB, error) {
	var open Opener
	switch d.Dialect {
	case SQLite:
		open = ds.SQLite
	case Postgres:
		open = ds.Postgres
	case MySQL:
		open = ds.MySQL
	}
	if open == nil {
		return nil, fmt.Errorf("%w: %s (import github.com/agentryhq/agentry/db/%s and pass its OpenDSN in dsn.Drivers)", ErrNotLinked, d.Dialect, d.Dialect)
	}
	return open(ctx, d, o)
}

// Open parses s and opens it with the driver of its dialect.
func Open(ctx context.Context, s string, drivers Drivers, o Options) (*db.DB, error) {
	d, err := Parse(s)
	if err != nil {
		return nil, err
	}
	return drivers.Open(ctx, d, o)
}
