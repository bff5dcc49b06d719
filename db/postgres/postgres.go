package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// Tables names the tables; zero fields take Agno's defaults.
type Tables = sqlstore.Tables

// DefaultSchema is where Agno keeps its tables on Postgres.
const DefaultSchema = "ai"

// Config opens a Postgres database.
type Config struct {
	// DSN is a postgres:// URL or key=value string understood by pgx.
	DSN string
	// Schema holds the tables; empty means DefaultSchema ("ai"). It is
	// created if missing.
	Schema string
	// ID is the db_id reported by AgentOS; empty means "postgres".
	ID     string
	Tables Tables
	// QueryTimeout bounds every call (waiting for a pooled connection and
	// its statements); zero means db.DefaultQueryTimeout (5s), negative no
	// bound. A call past it fails with db.ErrUnavailable.
	QueryTimeout time.Duration
	// MaxOpenConns bounds the pool; zero means 20.
	MaxOpenConns int
	// ConnectTimeout bounds the first connection when ctx has no deadline;
	// zero means 10s.
	ConnectTimeout time.Duration
	// SkipSchemaCheck opens without checking, creating or stamping tables. It
	// is for the migrate package, which opens 2.x databases to upgrade them.
	SkipSchemaCheck bool
	// ReadOnly creates nothing (no schema, no table) and runs every session
	// with default_transaction_read_only, so the server refuses writes too.
	// Without SkipSchemaCheck a schema without the sessions and runs tables
	// is an error.
	ReadOnly bool
	// SynchronousCommit sets synchronous_commit on the store's connections:
	// "on", "off", "local", "remote_write" or "remote_apply"; empty keeps
	// the server's setting (on by default). "off" lets a commit return
	// before its WAL reaches the disk: a crash of the Postgres server (not
	// of Agentry) can lose the runs of the last ~0.6 s (3 × wal_writer_delay),
	// never corrupt the database. See docs/hotpath.md. An unknown value
	// is an error at Open.
	SynchronousCommit string
	// Tracer, when set, sees every statement and batch the store's
	// connections send (pgx.QueryTracer, and pgx.BatchTracer when it is
	// one): tests count round trips with it.
	Tracer pgx.QueryTracer
}

// synchronousCommitValues are the values SynchronousCommit accepts.
var synchronousCommitValues = []string{"on", "off", "local", "remote_write", "remote_apply"}

// Open connects, checks the schema (creating Agno 3.0's tables on a fresh
// database) and returns the store. An unreachable server fails within
// ConnectTimeout; a 2.x database fails with db.ErrMigrationRequired.
func Open(ctx context.Context, cfg Config) (*db.DB, error) {
	if cfg.DSN == "" {
		return nil, db.ConfigError("postgres: Config.DSN is required")
	}
	if err := cfg.Tables.CheckNames(); err != nil {
		return nil, fmt.Errorf("postgres: Config.Tables: %w", err)
	}
	pc, err := pgx.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, db.ConfigError("postgres: invalid DSN: %w", err)
	}
	if cfg.ReadOnly {
		pc.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if v := cfg.SynchronousCommit; v != "" {
		if !slices.Contains(synchronousCommitValues, v) {
			return nil, db.ConfigError("postgres: Config.SynchronousCommit %q is not one of %v", v, synchronousCommitValues)
		}
		pc.RuntimeParams["synchronous_commit"] = v
	}
	if cfg.Tracer != nil {
		pc.Tracer = cfg.Tracer
	}
	sqlDB := stdlib.OpenDB(*pc)
	n := cfg.MaxOpenConns
	if n <= 0 {
		n = 20
	}
	sqlDB.SetMaxOpenConns(n)
	sqlDB.SetMaxIdleConns(n)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	pingCtx := ctx
	if _, ok := ctx.Deadline(); !ok {
		timeout := cfg.ConnectTimeout
		if timeout <= 0 {
			timeout = 10 * time.Second
		}
		var cancel context.CancelFunc
		pingCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := sqlDB.PingContext(pingCtx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("postgres: cannot connect (is the server running and the DSN right?): %w", err)
	}
	st, err := sqlstore.New(ctx, sqlstore.Config{
		Dialect:         Dialect(cfg.Schema),
		Tables:          cfg.Tables,
		Writer:          sqlDB,
		SkipSchemaCheck: cfg.SkipSchemaCheck,
		ReadOnly:        cfg.ReadOnly,
		WrapError:       classify,
	})
	if err != nil {
		sqlDB.Close()
		return nil, err
	}
	return db.Wrap(st, db.Config{ID: cfg.ID, QueryTimeout: cfg.QueryTimeout}), nil
}

// classify marks pgx's errors of a lost or unusable connection (closed
// mid-call, failed before it was used, timed out) with db.ErrUnavailable,
// and the server's refusal of a value its column cannot hold with
// db.ErrInvalidRecord.
func classify(err error) error {
	if err == nil || errors.Is(err, db.ErrUnavailable) {
		return err
	}
	if errors.Is(err, pgconn.ErrConnClosed) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return fmt.Errorf("%w: %w", db.ErrUnavailable, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && invalidValue[pe.Code] {
		return fmt.Errorf("%w: %w", db.ErrInvalidRecord, err)
	}
	return err
}

// invalidValue are the server's SQLSTATEs for a value its column cannot
// hold: a NUL byte in a text column (22021: Postgres text holds no U+0000,
// which SQLite and MySQL store), a \u0000 in jsonb the store did not write
// (22P05), JSON jsonb does not take (22P02: a lone surrogate escape such as
// "\ud800", which MariaDB's JSON check refuses too) and a value over a
// limit (54000: a btree index row over 2704 bytes, a jsonb object over
// 256 MB).
var invalidValue = map[string]bool{
	"22P02": true, // invalid_text_representation
	"22021": true, // character_not_in_repertoire
	"22P05": true, // untranslatable_character
	"54000": true, // program_limit_exceeded
}

// OpenDSN opens a parsed Postgres DSN (a dsn.Opener).
func OpenDSN(ctx context.Context, d dsn.DSN, o dsn.Options) (*db.DB, error) {
	if d.Dialect != dsn.Postgres {
		return nil, db.ConfigError("postgres: cannot open a %s DSN", d.Dialect)
	}
	if o.SQLiteExclusive {
		return nil, db.ConfigError("postgres: SQLiteExclusive is for SQLite files only")
	}
	return Open(ctx, Config{DSN: d.Conn, Schema: o.Schema, ID: o.ID, ReadOnly: o.ReadOnly, SkipSchemaCheck: o.SkipSchemaCheck, QueryTimeout: o.QueryTimeout})
}
