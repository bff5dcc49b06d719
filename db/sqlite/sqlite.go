package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/internal/sqlstore"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Tables names the tables; zero fields take Agno's defaults (agno_sessions,
// agno_runs or "{Sessions}_runs" when sessions is renamed, agno_memories, …).
type Tables = sqlstore.Tables

// Config opens a SQLite database file.
type Config struct {
	// Path is the database file, created if missing (unless ReadOnly or
	// MustExist). ":memory:" gives a private in-memory database on a single
	// connection.
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
	// ReadOnly opens the file read-only: it must exist, and nothing in it
	// changes, not even its journal mode. Without SkipSchemaCheck a file
	// without the sessions and runs tables is an error.
	ReadOnly bool
	// MustExist refuses to create a missing file.
	MustExist bool
	// CheckpointInterval is how often a passive WAL checkpoint runs besides
	// SQLite's automatic one, as a backstop that keeps the -wal file bounded;
	// zero means DefaultCheckpointInterval, negative none. A read-only or
	// in-memory database has none.
	CheckpointInterval time.Duration
	// Exclusive keeps the file to this process: its first connection takes
	// a lock that no other process gets past while the database is open
	// (they fail as locked after their busy timeout: a Python Agno, the
	// sqlite3 shell, `agentry migrate`), and in return SQLite keeps the
	// WAL index in this process's memory instead of the -shm file, and
	// no transaction takes a file lock (SQLite's "unix-excl" VFS). The
	// process's own connections (the writer and the readers) share the
	// file as without it. A turn of a conversation on SQLite costs ~10 %
	// less (docs/benchmarks.md). Unix only; not for ":memory:", ReadOnly
	// or a file another process uses at the same time.
	Exclusive bool
}

// DefaultCheckpointInterval is Config.CheckpointInterval's default.
const DefaultCheckpointInterval = 30 * time.Second

// walSizeLimit is the journal_size_limit: after a checkpoint the writer
// truncates a -wal file that grew past it (while a long read kept SQLite
// from checkpointing), instead of keeping its high-water size on disk.
const walSizeLimit = 32 << 20

// Open opens (and on first use creates) the database. A file that is not a
// SQLite database, or one locked past BusyTimeout, fails with an error saying
// so; a 2.x database fails with db.ErrMigrationRequired and is left exactly
// as it was (the switch to WAL comes after the schema check).
func Open(ctx context.Context, cfg Config) (*db.DB, error) {
	if cfg.Path == "" {
		return nil, db.ConfigError("sqlite: Config.Path is required")
	}
	if err := cfg.Tables.CheckNames(); err != nil {
		return nil, fmt.Errorf("sqlite: Config.Tables: %w", err)
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
	memory := cfg.Path == ":memory:"
	if err := checkExclusive(cfg, memory); err != nil {
		return nil, err
	}
	if !memory && (cfg.ReadOnly || cfg.MustExist) {
		if err := checkFile(cfg.Path); err != nil {
			return nil, err
		}
	}
	wrap := func(err error) error { return explain(cfg.Path, busy, err) }
	scfg := sqlstore.Config{
		Dialect:         Dialect(),
		Tables:          cfg.Tables,
		SkipSchemaCheck: cfg.SkipSchemaCheck,
		ReadOnly:        cfg.ReadOnly,
		WrapError:       wrap,
	}
	var err error
	switch {
	case memory:
		if scfg.Writer, err = open(connString(cfg.Path, busy, modeWriter, cfg.Exclusive)); err != nil {
			return nil, err
		}
		scfg.Writer.SetMaxOpenConns(1)
		scfg.Writer.SetConnMaxIdleTime(0)
		scfg.Writer.SetConnMaxLifetime(0)
	case cfg.ReadOnly:
		if scfg.Writer, err = openPool(ctx, connString(cfg.Path, busy, modeQueryOnly, cfg.Exclusive), readConns(cfg)); err != nil {
			return nil, wrap(err)
		}
	default:
		if scfg.Writer, scfg.Reader, err = openReadWrite(ctx, cfg, busy); err != nil {
			return nil, wrap(err)
		}
		if scfg.ChangeCounter, err = changeCounter(ctx, scfg.Writer); err != nil {
			closeAll(scfg.Writer, scfg.Reader)
			return nil, wrap(err)
		}
	}
	if scfg.Reader != nil {
		// Only a read-write file has a WAL to keep bounded.
		scfg.CheckpointInterval = cfg.CheckpointInterval
		if scfg.CheckpointInterval == 0 {
			scfg.CheckpointInterval = DefaultCheckpointInterval
		}
	}
	if !memory {
		mode := modeReader
		if cfg.ReadOnly {
			mode = modeQueryOnly
		}
		scfg.OpenMigrationPool = func() (*sql.DB, error) {
			p, err := sql.Open("sqlite", connString(cfg.Path, busy, mode, cfg.Exclusive))
			if err != nil {
				return nil, err
			}
			p.SetMaxOpenConns(4)
			return p, nil
		}
	}
	if err := scfg.Writer.PingContext(ctx); err != nil {
		closeAll(scfg.Writer, scfg.Reader)
		return nil, wrap(err)
	}
	st, err := sqlstore.New(ctx, scfg)
	if err != nil {
		closeAll(scfg.Writer, scfg.Reader)
		return nil, err
	}
	return db.Wrap(st, db.Config{ID: cfg.ID, QueryTimeout: cfg.QueryTimeout}), nil
}

// OpenDSN opens a parsed SQLite DSN (a dsn.Opener).
func OpenDSN(ctx context.Context, d dsn.DSN, o dsn.Options) (*db.DB, error) {
	if d.Dialect != dsn.SQLite {
		return nil, db.ConfigError("sqlite: cannot open a %s DSN", d.Dialect)
	}
	return Open(ctx, Config{Path: d.Path, ID: o.ID, ReadOnly: o.ReadOnly, MustExist: o.MustExist, SkipSchemaCheck: o.SkipSchemaCheck, QueryTimeout: o.QueryTimeout, Exclusive: o.SQLiteExclusive})
}

// openReadWrite opens the single writer connection and the reader pool. The
// schema is checked before the file is switched to WAL (a persistent change
// of its header), so a database refused as 2.x is not modified.
func openReadWrite(ctx context.Context, cfg Config, busy time.Duration) (writer, reader *sql.DB, err error) {
	if err := registerWriterVFS(); err != nil {
		return nil, nil, err
	}
	if writer, err = open(connString(cfg.Path, busy, modeWriter, cfg.Exclusive)); err != nil {
		return nil, nil, err
	}
	writer.SetMaxOpenConns(1) // one writer: run_index assignment never waits on SQLITE_BUSY in-process
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, nil, err
	}
	if !cfg.SkipSchemaCheck {
		if _, err := sqlstore.CheckSchema(ctx, writer, Dialect(), cfg.Tables); err != nil {
			writer.Close()
			return nil, nil, err
		}
	}
	if _, err := writer.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		writer.Close()
		return nil, nil, err
	}
	if reader, err = openPool(ctx, connString(cfg.Path, busy, modeReader, cfg.Exclusive), readConns(cfg)); err != nil {
		writer.Close()
		return nil, nil, err
	}
	return writer, reader, nil
}

func openPool(ctx context.Context, dsn string, n int) (*sql.DB, error) {
	p, err := open(dsn)
	if err != nil {
		return nil, err
	}
	p.SetMaxOpenConns(n)
	p.SetMaxIdleConns(n)
	if err := p.PingContext(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func readConns(cfg Config) int {
	if cfg.MaxReadConns > 0 {
		return cfg.MaxReadConns
	}
	return max(4, runtime.GOMAXPROCS(0))
}

// checkFile fails unless path is an existing file.
func checkFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("sqlite: database file %s does not exist (nothing was created): check the path", path)
	case err != nil:
		return fmt.Errorf("sqlite: %w", err)
	case fi.IsDir():
		return fmt.Errorf("sqlite: %s is a directory, not a database file: name a file, such as %s", path, filepath.Join(path, "agentry.db"))
	}
	return nil
}

func closeAll(dbs ...*sql.DB) {
	for _, d := range dbs {
		if d != nil {
			d.Close()
		}
	}
}

// Connection modes of connString.
const (
	modeWriter = iota
	modeReader
	// modeQueryOnly refuses every change (query_only). Its connections are
	// read-write at the file level (SQLite falls back to read-only for a
	// write-protected file), so that the last one to close removes the -wal
	// and -shm files a WAL database gets while open: connections opened
	// mode=ro leave them behind.
	modeQueryOnly
)

// connString is the driver's connection string: a file: URI, so that any path
// works (a '?' or '#' in it is escaped), with the pragmas every connection
// sets. Journal mode is not among them: it is a persistent property of the
// file, set once by openReadWrite.
func connString(path string, busy time.Duration, mode int, exclusive bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	if path == ":memory:" {
		return path + "?" + q.Encode()
	}
	switch mode {
	case modeWriter:
		q.Add("_pragma", "synchronous(NORMAL)")
		// The writer's statement journals stay in memory: concurrent run
		// writes share a transaction with a savepoint each (sqlstore's
		// group commit), and a savepoint copies every page it changes
		// that the transaction changed before; past 64 KiB SQLite spills
		// that copy to a temp file, a write(2) per page.
		q.Add("_pragma", "temp_store(MEMORY)")
		q.Set("_txlock", "immediate")
		q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walSizeLimit))
	case modeReader:
		q.Add("_pragma", "synchronous(NORMAL)")
	case modeQueryOnly:
		q.Set("mode", "rw")
		q.Add("_pragma", "query_only(1)")
	}
	switch {
	case mode == modeWriter:
		// The WAL's writes of a transaction in one call (walvfs_unix.go).
		if v := writerVFS(exclusive); v != "" {
			q.Set("vfs", v)
		}
	case exclusive:
		q.Set("vfs", exclusiveVFS)
	}
	if strings.HasPrefix(path, "//") {
		path = filepath.Clean(path) // "file://" would start an authority
	}
	return "file:" + uriPath.Replace(path) + "?" + q.Encode()
}

// exclusiveVFS is SQLite's VFS for Config.Exclusive (os_unix.c): a lock on
// the file for the whole process, the WAL index in heap memory.
const exclusiveVFS = "unix-excl"

// checkExclusive refuses Config.Exclusive where it cannot work.
func checkExclusive(cfg Config, memory bool) error {
	switch {
	case !cfg.Exclusive:
		return nil
	case memory:
		return db.ConfigError("sqlite: Config.Exclusive is for a database file; :memory: is private to its one connection already")
	case cfg.ReadOnly:
		return db.ConfigError("sqlite: Config.Exclusive cannot be combined with ReadOnly: a read-only open must not lock the file's writer out")
	case !hasUnixVFS:
		return db.ConfigError("sqlite: Config.Exclusive needs SQLite's unix VFS (%s), which this platform does not have", exclusiveVFS)
	}
	return nil
}

// uriPath escapes what SQLite's URI parser would otherwise read as syntax.
var uriPath = strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23")

// explain turns SQLite's terse errors about the file into ones that say what
// is wrong and what to do.
func explain(path string, busy time.Duration, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
		return fmt.Errorf("sqlite: %s is a directory: name a database file, e.g. %s: %w", path, filepath.Join(path, "agentry.db"), err)
	}
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
