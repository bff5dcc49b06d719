package sqltools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/tool"
)

// Defaults of Config's zero values.
const (
	DefaultLimit     = 10
	DefaultMaxRows   = 100
	DefaultMaxOutput = 64 << 10
	DefaultTimeout   = 30 * time.Second
	maxCellBytes     = 2000
	maxQueryBytes    = 64 << 10
)

// Config configures the sql toolkit.
type Config struct {
	// DSN names the database: a SQLite file path (or sqlite://, file: URI),
	// postgres://… or mysql://… (mariadb://… and native MySQL DSNs work too).
	DSN string
	// AllowWrite lists the tables (optionally schema.table) that INSERT,
	// UPDATE, DELETE and REPLACE may change. Empty: the toolkit only reads.
	AllowWrite []string
	// Schema is the Postgres schema listed and searched (default "public").
	Schema string
	// MaxRows caps the rows one query returns (the model's limit may ask
	// for fewer); zero means DefaultMaxRows.
	MaxRows int
	// MaxOutput caps the JSON returned by one query, in bytes.
	MaxOutput int
	// Timeout bounds one tool call; zero means DefaultTimeout.
	Timeout time.Duration
	// RefusePrivileged makes every tool call fail with ErrPrivileged when
	// the DSN's user is privileged beyond what a read-only transaction
	// stops (see Privileges), or when its privileges cannot be read (for
	// privRetry after each failed read); without it the toolkit logs a
	// warning once (a failed read: once per privRetry) and runs.
	RefusePrivileged bool
	// Logger receives that warning; nil means slog.Default().
	Logger *slog.Logger
}

// ErrPrivileged marks a call refused because Config.RefusePrivileged is set
// and the connection's user is privileged, or its privileges could not be
// read.
var ErrPrivileged = errors.New("sqltools: the database user is privileged")

// serverBound is how long the server may run the model's statement: the
// time left before the call's deadline, at most timeout, at least a
// millisecond (zero would mean no bound to the servers).
func serverBound(ctx context.Context, timeout time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	return max(timeout, time.Millisecond)
}

// Toolkit is the sql toolkit with its database connection.
type Toolkit struct {
	cfg     Config
	dialect string
	eng     engine
	allow   map[string]bool

	privMu  sync.Mutex
	privSet bool   // the privileges were read
	user    string // the server's name for the connection's user
	privs   []string
	// privErr is the last failed read of the privileges, which stands
	// until privRetryAt: the calls meanwhile do not read them again.
	privErr     error
	privRetryAt time.Time
	now         func() time.Time
}

// privRetry is how long a failed read of the user's privileges stands
// before a call reads them again: a server that cannot answer it (a view
// the user may not read, a proxy that does not know it) costs a round
// trip and a warning per privRetry instead of per call.
const privRetry = 30 * time.Second

// engine is what differs between databases.
type engine interface {
	// privileges names the connection's user and the privileges it holds
	// that a read-only transaction does not stop.
	privileges(ctx context.Context) (user string, privs []string, err error)
	listTables(ctx context.Context) ([]string, error)
	describeTable(ctx context.Context, table string) ([]Column, error)
	// run executes st; a read runs in a read-only transaction that is
	// rolled back.
	run(ctx context.Context, st statement, query string, out *resultWriter) error
	// stoppedAtBound reports an error of the server ending the statement
	// at the bound run set for it.
	stoppedAtBound(err error) bool
	close() error
}

// Column describes one column of a table.
type Column struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Nullable bool    `json:"nullable"`
	Default  *string `json:"default,omitempty"`
	Key      bool    `json:"primary_key,omitempty"`
}

// Dialect names the engine a DSN selects, read as db/dsn reads --db (a
// SQLite path, sqlite:…, file: URI, postgres://…, mysql://…, mariadb://…
// or go-sql-driver's user@tcp(…)/db and user@unix(…)/db). Its errors never
// repeat a password.
func Dialect(dsnText string) (string, error) {
	d, err := parseDSN(dsnText)
	return d.Dialect, err
}

func parseDSN(dsnText string) (dsn.DSN, error) {
	if strings.TrimSpace(dsnText) == "" {
		return dsn.DSN{}, errors.New("sqltools: dsn is required (a SQLite file path, postgres://… or mysql://…)")
	}
	d, err := dsn.Parse(dsnText)
	if err != nil {
		return dsn.DSN{}, fmt.Errorf("sqltools: %w", err)
	}
	return d, nil
}

// New opens the database (lazily: no connection is made until the first
// call, except that a SQLite file must exist) and returns the toolkit.
// Close releases the connections.
func New(cfg Config) (*Toolkit, error) {
	parsed, err := parseDSN(cfg.DSN)
	if err != nil {
		return nil, err
	}
	dialect := parsed.Dialect
	if cfg.MaxRows <= 0 {
		cfg.MaxRows = DefaultMaxRows
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if dialect == Postgres && cfg.Schema == "" {
		cfg.Schema = "public"
	}
	if dialect != Postgres && cfg.Schema != "" {
		return nil, fmt.Errorf("sqltools: schema applies to Postgres only; for %s put the database in the dsn", dialect)
	}
	k := &Toolkit{cfg: cfg, dialect: dialect, allow: map[string]bool{}, now: time.Now}
	for _, t := range cfg.AllowWrite {
		st, err := classify(dialect, "DELETE FROM "+t)
		if err != nil || strings.TrimSpace(t) == "" {
			return nil, fmt.Errorf("sqltools: allow_write entry %q is not a table name", t)
		}
		k.allow[st.table.String()] = true
	}
	switch dialect {
	case SQLite:
		k.eng, err = openSQLite(parsed.Path, cfg.AllowWrite)
	case Postgres:
		k.eng, err = openPostgres(cfg.DSN, cfg.Schema, cfg.Timeout)
	default:
		k.eng, err = openMySQL(cfg.DSN, cfg.Timeout)
	}
	if err != nil {
		return nil, err
	}
	return k, nil
}

// Close closes the database connections.
func (k *Toolkit) Close() error { return k.eng.close() }

// Dialect is the engine in use: SQLite, Postgres or MySQL.
func (k *Toolkit) Dialect() string { return k.dialect }

type noArgs struct{}

type describeIn struct {
	TableName string `json:"table_name" jsonschema:"a table name as list_tables returns it"`
}

type runIn struct {
	Query string `json:"query" jsonschema:"one SQL statement"`
	Limit int    `json:"limit,omitempty" jsonschema:"maximum rows to return; default 10"`
}

// Toolkit returns the tools as a tool.Toolkit named "sql_tools". Choose tools
// with the toolkit's Include and Exclude (Agno 2.x enable_* flags are gone).
func (k *Toolkit) Toolkit() (tool.Toolkit, error) {
	mode := "read-only"
	if len(k.allow) > 0 {
		mode = "read-only except INSERT/UPDATE/DELETE on " + strings.Join(k.cfg.AllowWrite, ", ")
	}
	list, err := tool.Func(tool.FuncConfig{Name: "list_tables", Description: "Lists the tables of the " + k.dialect + " database as a JSON array.", Timeout: k.cfg.Timeout},
		func(ctx context.Context, _ noArgs) ([]string, error) {
			if err := k.checkPrivileges(ctx); err != nil {
				return nil, err
			}
			return k.eng.listTables(ctx)
		})
	if err != nil {
		return tool.Toolkit{}, err
	}
	describe, err := tool.Func(tool.FuncConfig{Name: "describe_table", Description: "Describes a table's columns (name, type, nullable, default, primary key) as JSON.", Timeout: k.cfg.Timeout},
		k.describe)
	if err != nil {
		return tool.Toolkit{}, err
	}
	run, err := tool.Func(tool.FuncConfig{
		Name: "run_sql_query",
		Description: fmt.Sprintf("Runs one %s SQL statement (%s) and returns JSON {columns, rows, truncated}; at most %d rows.",
			k.dialect, mode, k.cfg.MaxRows),
		Timeout: k.cfg.Timeout,
	}, k.run)
	if err != nil {
		return tool.Toolkit{}, err
	}
	return tool.Toolkit{Name: "sql_tools", Tools: []tool.Tool{list, describe, run}}, nil
}

func (k *Toolkit) describe(ctx context.Context, in describeIn) ([]Column, error) {
	if err := k.checkPrivileges(ctx); err != nil {
		return nil, err
	}
	name := strings.TrimSpace(in.TableName)
	tables, err := k.eng.listTables(ctx)
	if err != nil {
		return nil, err
	}
	found := false
	for _, t := range tables {
		found = found || t == name
	}
	if !found {
		return nil, fmt.Errorf("no table %q: call list_tables for the names", name)
	}
	return k.eng.describeTable(ctx, name)
}

func (k *Toolkit) run(ctx context.Context, in runIn) (json.RawMessage, error) {
	if len(in.Query) > maxQueryBytes {
		return nil, fmt.Errorf("%w: the query is %d bytes; keep it under %d", ErrRefused, len(in.Query), maxQueryBytes)
	}
	st, err := classify(k.dialect, in.Query)
	if err != nil {
		return nil, err
	}
	if st.write {
		if len(k.allow) == 0 {
			return nil, fmt.Errorf("%w: this database is read-only for you; %s is not run (no table is in allow_write)", ErrRefused, st.verb)
		}
		if !k.allow[st.table.String()] {
			return nil, fmt.Errorf("%w: %s on %s is not allowed; writable tables: %s", ErrRefused, st.verb, st.table, strings.Join(k.cfg.AllowWrite, ", "))
		}
	}
	limit := in.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 0 {
		return nil, fmt.Errorf("limit %d: use a positive number of rows", limit)
	}
	limit = min(limit, k.cfg.MaxRows)
	if err := k.checkPrivileges(ctx); err != nil {
		return nil, err
	}
	w := newResultWriter(limit, k.cfg.MaxOutput)
	if err := k.eng.run(ctx, st, strings.TrimSpace(in.Query), w); err != nil {
		if k.eng.stoppedAtBound(err) {
			return nil, fmt.Errorf("%w: the database stopped the query at the %s limit (%v); it may be waiting for a lock another session holds, or need a smaller or simpler query", tool.ErrTimeout, k.cfg.Timeout, err)
		}
		return nil, fmt.Errorf("the database refused the query: %w", err)
	}
	return w.json()
}

// Privileges reads (once) and returns the server's name for the DSN's user
// and the privileges it holds that the toolkit's read-only transaction and
// statement gate do not stop: a Postgres superuser, or a member of
// pg_read_server_files, pg_write_server_files or pg_execute_server_program;
// a MySQL or MariaDB user's global SUPER, FILE, PROCESS, CONNECTION ADMIN or
// SHUTDOWN (on MariaDB also those of its default role). None for SQLite.
//
// A read that fails is logged and its error stands for privRetry: calls
// meanwhile get it without reading again. A read the caller's context ended
// is not remembered.
func (k *Toolkit) Privileges(ctx context.Context) (user string, privs []string, err error) {
	k.privMu.Lock()
	defer k.privMu.Unlock()
	if k.privSet {
		return k.user, k.privs, nil
	}
	if k.privErr != nil && k.now().Before(k.privRetryAt) {
		return "", nil, k.privErr
	}
	user, privs, err = k.eng.privileges(ctx)
	if err != nil {
		err = fmt.Errorf("sqltools: reading the database user's privileges: %w", err)
		if ctx.Err() != nil {
			return "", nil, err
		}
		k.privErr, k.privRetryAt = err, k.now().Add(privRetry)
		k.cfg.Logger.WarnContext(ctx, "sql toolkit could not read the database user's privileges; it cannot tell whether the user reaches past the read-only transaction",
			slog.String("dialect", k.dialect), slog.Any("err", err), slog.Bool("refused", k.cfg.RefusePrivileged), slog.Duration("retry_in", privRetry))
		return "", nil, err
	}
	k.user, k.privs, k.privSet, k.privErr = user, privs, true, nil
	if len(k.privs) > 0 {
		// The server's name for the user, never the DSN (which may hold a
		// password).
		k.cfg.Logger.WarnContext(ctx, "sql toolkit connected as a privileged database user; connect as one with only the privileges the agent needs",
			slog.String("dialect", k.dialect), slog.String("user", k.user), slog.Any("privileges", k.privs),
			slog.Bool("refused", k.cfg.RefusePrivileged))
	}
	return k.user, k.privs, nil
}

// checkPrivileges refuses a call when RefusePrivileged is set and the user
// is privileged, or its privileges cannot be read (fail closed: such a
// user may be privileged); it logs the warning on the first call either
// way. A call whose context ended while the privileges were read fails
// with that error.
func (k *Toolkit) checkPrivileges(ctx context.Context) error {
	user, privs, err := k.Privileges(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil && k.cfg.RefusePrivileged:
		return fmt.Errorf("%w: its privileges could not be read, and the toolkit is set to refuse a user it cannot check (RefusePrivileged): %w", ErrPrivileged, err)
	case err != nil:
		return nil
	case k.cfg.RefusePrivileged && len(privs) > 0:
		return fmt.Errorf("%w: %s holds %s, and the toolkit is set to refuse such a user (RefusePrivileged); connect as a user with only the privileges the agent needs", ErrPrivileged, user, strings.Join(privs, ", "))
	}
	return nil
}
