package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Tables names the tables; zero fields take Agno's defaults (agno_sessions,
// agno_runs or "{Sessions}_runs" when sessions is renamed, agno_memories, …).
type Tables = sqlstore.Tables

// Config opens a SQLite database file.
type Config struct {
	// Path is the database file, created if missing. ":memory:" gives a
	// private in-memory database on a single connection.
	Path string
	// ID is the db_id reported by AgentOS; empty means "sqlite".
	ID     string
	Tables Tables
	// BusyTimeout is how long a statement waits for another process's lock
	// before failing; zero means 5s. The query timeout caps it.
	BusyTimeout time.Duration
	// QueryTimeout bounds every call (waiting for a pooled connection and
	// its statements); zero means db.DefaultQueryTimeout (5s), negative no
	// bound. A call past it fails with db.ErrUnavailable.
	QueryTimeout time.Duration
	// MaxReadConns bounds the reader pool; zero means max(4, GOMAXPROCS).
	MaxReadConns int
	// SkipSchemaCheck opens without checking, creating or stamping tables. It
	// is for the migrate package, which opens 2.x databases to upgrade them;
	// everyone else gets db.ErrMigrationRequired from such a database.
	SkipSchemaCheck bool
	// CheckpointInterval is how often a passive WAL checkpoint runs besides
	// SQLite's automatic one, as a backstop that keeps the -wal file bounded;
	// zero means DefaultCheckpointInterval, negative none.
	CheckpointInterval time.Duration
}

// DefaultCheckpointInterval is Config.CheckpointInterval's default.
const DefaultCheckpointInterval = 30 * time.Second

// walSizeLimit is the journal_size_limit: after a checkpoint the writer
// truncates a -wal file that grew past it (while a long read kept SQLite
// from checkpointing), instead of keeping its high-water size on disk.
const walSizeLimit = 32 << 20

// Open opens (and on first use creates) the database. A file that is not a
// SQLite database, or one locked past BusyTimeout, fails with an error saying
// so; a 2.x database fails with db.ErrMigrationRequired.
func Open(ctx context.Context, cfg Config) (*db.DB, error) {
	if cfg.Path == "" {
		return nil, errors.New("sqlite: Config.Path is required")
	}
	busy := cfg.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	// Writes run their statements without the query timeout's deadline
	// (see sqlstore's gate): the lock wait is what must end within it.
	qt := cfg.QueryTimeout
	if qt == 0 {
		qt = db.DefaultQueryTimeout
	}
	if qt > 0 && qt < busy {
		busy = qt
	}
	wrap := func(err error) error { return explain(cfg.Path, busy, err) }
	var writer, reader *sql.DB
	var err error
	if cfg.Path == ":memory:" {
		writer, err = sql.Open("sqlite", dsn(cfg.Path, busy, false))
		if err != nil {
			return nil, err
		}
		writer.SetMaxOpenConns(1)
		writer.SetConnMaxIdleTime(0)
		writer.SetConnMaxLifetime(0)
	} else {
		writer, err = sql.Open("sqlite", dsn(cfg.Path, busy, true))
		if err != nil {
			return nil, err
		}
		writer.SetMaxOpenConns(1) // one writer: run_index assignment never waits on SQLITE_BUSY in-process
		if err := writer.PingContext(ctx); err != nil {
			writer.Close()
			return nil, wrap(err)
		}
		reader, err = sql.Open("sqlite", dsn(cfg.Path, busy, false))
		if err != nil {
			writer.Close()
			return nil, err
		}
		n := cfg.MaxReadConns
		if n <= 0 {
			n = max(4, runtime.GOMAXPROCS(0))
		}
		reader.SetMaxOpenConns(n)
		reader.SetMaxIdleConns(n)
	}
	if err := writer.PingContext(ctx); err != nil {
		closeAll(writer, reader)
		return nil, wrap(err)
	}
	scfg := sqlstore.Config{
		Dialect:         sqlstore.Dialect{Name: sqlstore.SQLite},
		Tables:          cfg.Tables,
		Writer:          writer,
		Reader:          reader,
		SkipSchemaCheck: cfg.SkipSchemaCheck,
		WrapError:       wrap,
	}
	if reader != nil {
		scfg.CheckpointInterval = cfg.CheckpointInterval
		if scfg.CheckpointInterval == 0 {
			scfg.CheckpointInterval = DefaultCheckpointInterval
		}
		scfg.OpenMigrationPool = func() (*sql.DB, error) {
			p, err := sql.Open("sqlite", dsn(cfg.Path, busy, false))
			if err != nil {
				return nil, err
			}
			p.SetMaxOpenConns(4)
			return p, nil
		}
	}
	st, err := sqlstore.New(ctx, scfg)
	if err != nil {
		closeAll(writer, reader)
		return nil, err
	}
	return db.Wrap(st, db.Config{ID: cfg.ID, QueryTimeout: cfg.QueryTimeout}), nil
}

func closeAll(dbs ...*sql.DB) {
	for _, d := range dbs {
		if d != nil {
			d.Close()
		}
	}
}

func dsn(path string, busy time.Duration, writer bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	if path != ":memory:" {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	if writer {
		q.Set("_txlock", "immediate")
		if path != ":memory:" {
			q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walSizeLimit))
		}
	}
	return path + "?" + q.Encode()
}

// explain turns SQLite's terse errors about the file into ones that say what
// is wrong and what to do.
func explain(path string, busy time.Duration, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "file is not a database") || strings.Contains(msg, "SQLITE_NOTADB"):
		return fmt.Errorf("sqlite: %s is not a SQLite database (wrong file, or encrypted/corrupt): %w", path, err)
	case strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQLITE_BUSY"):
		return fmt.Errorf("sqlite: %w: %s is locked by another connection or process (waited %s); stop the other writer or raise Config.BusyTimeout: %w", db.ErrUnavailable, path, busy, err)
	case strings.Contains(msg, "unable to open database file") || strings.Contains(msg, "SQLITE_CANTOPEN"):
		return fmt.Errorf("sqlite: cannot open %s (does its directory exist and is it writable?): %w", path, err)
	}
	return err
}
