package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// Tables names the tables; zero fields take Agno's defaults.
type Tables = sqlstore.Tables

// Config opens a MySQL or MariaDB database.
type Config struct {
	// DSN is a go-sql-driver DSN ("user:pass@tcp(host:3306)/dbname") or a
	// mysql://user:pass@host:3306/dbname URL. The database must exist.
	DSN string
	// ID is the db_id reported by AgentOS; empty means "mysql".
	ID     string
	Tables Tables
	// QueryTimeout bounds every call (waiting for a pooled connection and
	// its statements); zero means db.DefaultQueryTimeout (5s), negative no
	// bound. A call past it fails with db.ErrUnavailable.
	QueryTimeout time.Duration
	// MaxOpenConns bounds the pool; zero means 20.
	MaxOpenConns int
	// ConnectTimeout bounds dialing; zero means 10s.
	ConnectTimeout time.Duration
	// SkipSchemaCheck opens without checking, creating or stamping tables. It
	// is for the migrate package, which opens 2.x databases to upgrade them.
	SkipSchemaCheck bool
	// ReadOnly creates no table; without SkipSchemaCheck a database without
	// the sessions and runs tables is an error.
	ReadOnly bool
}

// ParseDSN reads a DSN in any MySQL form dsn.Parse accepts (a mysql:// or
// mariadb:// URL, or the go-sql-driver form) and returns the driver
// configuration with the settings this package relies on: utf8mb4,
// found-rows counting (so a guarded UPDATE that changes nothing still counts
// its row) and STRICT_ALL_TABLES added to the connection's sql_mode (so a
// value its column cannot hold is refused, never stored changed).
func ParseDSN(s string) (*gomysql.Config, error) {
	d, err := dsn.Parse(s)
	if err != nil {
		return nil, db.ConfigError("mysql: %w", err)
	}
	if d.Dialect != dsn.MySQL {
		return nil, db.ConfigError("mysql: %s is a %s DSN: write mysql://USER@HOST:PORT/DATABASE or USER@tcp(HOST:PORT)/DATABASE", d, d.Dialect)
	}
	return parseConn(d.Conn)
}

// strictMode is the sql_mode flag parseConn adds to every connection's mode.
const strictMode = "STRICT_ALL_TABLES"

// parseConn parses a go-sql-driver DSN and applies the settings above.
func parseConn(conn string) (*gomysql.Config, error) {
	cfg, err := gomysql.ParseDSN(conn)
	if err != nil {
		return nil, db.ConfigError("mysql: invalid DSN: %w", err)
	}
	cfg.ClientFoundRows = true
	cfg.MultiStatements = false
	// Strict mode on every connection, added to the server's mode or the
	// DSN's: without it the server stores a value too long for its column
	// cut, a NULL in a NOT NULL column as a default or a bad date as zero,
	// with only a warning.
	mode := "@@SESSION.sql_mode"
	if v, ok := cfg.Params["sql_mode"]; ok {
		mode = v
	}
	if !strings.Contains(mode, strictMode) {
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		cfg.Params["sql_mode"] = "CONCAT_WS(',', NULLIF(" + mode + ", ''), '" + strictMode + "')"
	}
	if cfg.Collation == "" || !strings.HasPrefix(cfg.Collation, "utf8mb4") {
		cfg.Collation = "utf8mb4_general_ci"
	}
	return cfg, nil
}

// Open connects, checks the schema (creating Agno 3.0's tables on a fresh
// database) and returns the store. An unreachable server fails within
// ConnectTimeout; a 2.x database fails with db.ErrMigrationRequired.
func Open(ctx context.Context, cfg Config) (*db.DB, error) {
	if cfg.DSN == "" {
		return nil, db.ConfigError("mysql: Config.DSN is required")
	}
	if err := cfg.Tables.CheckNames(); err != nil {
		return nil, fmt.Errorf("mysql: Config.Tables: %w", err)
	}
	mc, err := ParseDSN(cfg.DSN)
	if err != nil {
		return nil, err
	}
	if mc.DBName == "" {
		return nil, db.ConfigError("mysql: the DSN names no database (…/dbname)")
	}
	timeout := cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	mc.Timeout = timeout
	conn, err := gomysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	sqlDB := sql.OpenDB(conn)
	n := cfg.MaxOpenConns
	if n <= 0 {
		n = 20
	}
	sqlDB.SetMaxOpenConns(n)
	sqlDB.SetMaxIdleConns(n)
	sqlDB.SetConnMaxLifetime(30 * time.Minute)
	pingCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := sqlDB.PingContext(pingCtx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("mysql: cannot connect to %s (is the server running and the DSN right?): %w", mc.Addr, err)
	}
	// A run_data within the server's packet, with room for the statement's
	// other values (a longer one: sqlstore.Config.MaxRunData).
	var packet int
	if err := sqlDB.QueryRowContext(pingCtx, "SELECT @@max_allowed_packet").Scan(&packet); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("mysql: read max_allowed_packet: %w", classify(err))
	}
	st, err := sqlstore.New(ctx, sqlstore.Config{
		Dialect:         Dialect(),
		Tables:          cfg.Tables,
		Writer:          sqlDB,
		SkipSchemaCheck: cfg.SkipSchemaCheck,
		ReadOnly:        cfg.ReadOnly,
		WrapError:       classify,
		MaxRunData:      max(packet-runPacketSlack, 1),
	})
	if err != nil {
		sqlDB.Close()
		return nil, err
	}
	return db.Wrap(st, db.Config{ID: cfg.ID, QueryTimeout: cfg.QueryTimeout}), nil
}

// runPacketSlack is what a run write's statement holds besides run_data
// (its other values: ids of up to 255 characters, counted in bytes).
const runPacketSlack = 64 << 10

// classify marks the driver's error of a connection lost mid-call with
// db.ErrUnavailable, and the server's refusal of a value its column cannot
// hold with db.ErrInvalidRecord.
func classify(err error) error {
	if err == nil || errors.Is(err, db.ErrUnavailable) || errors.Is(err, db.ErrInvalidRecord) {
		return err
	}
	if errors.Is(err, gomysql.ErrInvalidConn) {
		return fmt.Errorf("%w: %w", db.ErrUnavailable, err)
	}
	var me *gomysql.MySQLError
	if errors.As(err, &me) && invalidValue[me.Number] {
		return fmt.Errorf("%w: %w", db.ErrInvalidRecord, err)
	}
	return err
}

// invalidValue are the server's errors for a value its column cannot hold
// (raised in strict mode; the store never writes with INSERT IGNORE, which
// turns them into warnings and stores a changed value).
var invalidValue = map[uint16]bool{
	1048: true, // ER_BAD_NULL_ERROR: NULL in a NOT NULL column
	1264: true, // ER_WARN_DATA_OUT_OF_RANGE
	1292: true, // ER_TRUNCATED_WRONG_VALUE: a bad date or number
	1364: true, // ER_NO_DEFAULT_FOR_FIELD
	1366: true, // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD: bytes not valid in the column's character set
	1406: true, // ER_DATA_TOO_LONG: longer than the column (VARCHAR(255) ids and names)
	3140: true, // ER_INVALID_JSON_TEXT (MySQL)
	4025: true, // ER_CONSTRAINT_FAILED (MariaDB's JSON columns check JSON_VALID)
}

// OpenDSN opens a parsed MySQL or MariaDB DSN (a dsn.Opener).
func OpenDSN(ctx context.Context, d dsn.DSN, o dsn.Options) (*db.DB, error) {
	if d.Dialect != dsn.MySQL {
		return nil, db.ConfigError("mysql: cannot open a %s DSN", d.Dialect)
	}
	if o.SQLiteExclusive {
		return nil, db.ConfigError("mysql: SQLiteExclusive is for SQLite files only")
	}
	return Open(ctx, Config{DSN: d.Conn, ID: o.ID, ReadOnly: o.ReadOnly, SkipSchemaCheck: o.SkipSchemaCheck, QueryTimeout: o.QueryTimeout})
}
