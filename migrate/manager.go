package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// Config configures a Manager. Zero values are documented per field.
type Config struct {
	// DB is the database to migrate. Required (ForDB fills it from an opened
	// store). A migration holds up to three connections at once (lock, copy
	// reader, copy writer). A SQLite database wants WAL and a busy timeout
	// (the sqlite driver sets both), since the copy reads the next batch
	// while it writes the current one.
	DB *sql.DB
	// Dialect is DB's SQL, from its driver package (sqlite.Dialect(),
	// postgres.Dialect(schema), mysql.Dialect()); it also names the schema
	// holding the tables. Required.
	Dialect *sqlstore.Dialect
	// Tables names the tables; zero fields take Agno's defaults.
	Tables Tables
	// BatchSize is how many sessions one copy transaction reads; 0 means 500.
	// A batch also ends once it holds BatchBytes of legacy runs.
	BatchSize int
	// BatchBytes bounds the legacy JSON one batch holds in memory; 0 means 4 MiB.
	BatchBytes int
	// Progress, when set, is called after each batch of a long step.
	Progress func(Progress)
	// DryRun makes Up, Down and CleanupLegacyRunsColumn report what they would
	// do without writing anything.
	DryRun bool
	// PurgeUnrecoverableLearnings makes the learnings table's 3.0.0 step
	// (the entity memory re-key, see LearningsRekey) delete the rows it cannot
	// re-key safely (contaminated: two users wrote them; unowned: no user_id)
	// instead of quarantining contaminated rows and leaving unowned ones.
	PurgeUnrecoverableLearnings bool
	// LockTimeout bounds the wait for another migration of the same database;
	// 0 means 30s. The wait fails with ErrLocked.
	LockTimeout time.Duration
	// Logger receives one line per step and per recorded bad row; nil discards.
	Logger *slog.Logger
}

// Manager moves a database between schema versions. It is safe to use from one
// goroutine at a time; separate processes are serialised by a database lock.
type Manager struct {
	cfg    Config
	tables Tables
	sd     *sqlstore.Dialect // the storage layer's: quoting, placeholders, catalog, DDL
	cat    catalog
	log    *slog.Logger
	// tuneCopy relaxes one copy transaction (the dialect's TuneCopy, set
	// by copyRuns); nil when none.
	tuneCopy func(context.Context, *sql.Tx) error
	// readOnly: the database was opened read-only (ForDB); only dry runs
	// and Status work.
	readOnly bool
	// bad tracks recorded bad rows during Up (nil outside it).
	bad *badState
	// firstCopy says where Up's 3.0.0 copy started (nil outside Up, or
	// when Up did not run it).
	firstCopy *copyStart
	// unscopedRecords: the copied-runs table holds records an earlier
	// release wrote, keyed by run_id alone (set by ensureBookkeeping);
	// saveRecords then deletes those of the runs it records.
	unscopedRecords bool
	// dryTaken, in a dry Up, names the session whose run a batch before
	// would have copied, by a hash of its run_id (see dryClaim).
	dryTaken map[uint64]string
	drySeed  maphash.Seed
	// stopAt, set by tests only, is called at the named points of Down's
	// drop of the runs table ("before runs drop", "after runs drop"); an
	// error stops Down there, as a crash would.
	stopAt func(point string) error
}

// ErrLocked is returned when another migration holds the database's lock for
// longer than Config.LockTimeout.
var ErrLocked = sqlstore.ErrMigrationLocked

// ErrUnknownVersion is returned for a target that is not in Versions.
var ErrUnknownVersion = errors.New("migrate: unknown schema version")

// minConns is how many connections a migration holds at once: the
// cross-process lock (Postgres, MySQL), the copy's reader and its writer.
const minConns = 3

// New checks the config and returns a Manager. It does not touch the database.
func New(cfg Config) (*Manager, error) {
	if cfg.DB == nil {
		return nil, db.ConfigError("migrate: Config.DB is required")
	}
	if err := cfg.Dialect.Check(); err != nil {
		return nil, db.ConfigError("migrate: Config.Dialect: %w", err)
	}
	if n := cfg.DB.Stats().MaxOpenConnections; n > 0 && n < minConns {
		return nil, db.ConfigError("migrate: Config.DB allows %d open connections; a migration holds %d at once (lock, reader, writer): raise SetMaxOpenConns", n, minConns)
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 500
	}
	if cfg.BatchBytes <= 0 {
		cfg.BatchBytes = 4 << 20
	}
	if cfg.LockTimeout <= 0 {
		cfg.LockTimeout = 30 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tables := cfg.Tables.WithDefaults()
	if err := tables.CheckNames(); err != nil {
		return nil, db.ConfigError("migrate: Config.Tables: %w", err)
	}
	sd := new(sqlstore.Dialect)
	*sd = *cfg.Dialect // the Manager's own copy: the caller cannot change it later
	return &Manager{cfg: cfg, tables: tables, sd: sd, cat: catalog{d: sd}, log: log}, nil
}

// Tables returns the table names in use, defaults filled in.
func (m *Manager) Tables() Tables { return m.tables }

// qualify returns the quoted, schema-qualified name of a table.
func (m *Manager) qualify(table string) string { return m.sd.Table(table) }

// q rebinds "?" placeholders for the dialect.
func (m *Manager) q(query string) string { return m.sd.Bind(query) }

// quote quotes one identifier.
func (m *Manager) quote(name string) string { return m.sd.Quote(name) }

// SchemaMismatchError says which table matches no known layout and how. It
// unwraps to db.ErrSchemaMismatch.
type SchemaMismatchError struct {
	Table  string
	Detail string
}

func (e *SchemaMismatchError) Error() string {
	return fmt.Sprintf("db: schema mismatch: table %s: %s", e.Table, e.Detail)
}

// TableStatus is one table's place in the version sequence.
type TableStatus struct {
	// Kind is what the table is for (KindSessions, …); Table its name.
	Kind  string `json:"kind"`
	Table string `json:"table"`
	// Exists is false for a table the database does not have yet; Up to 3.0.0
	// creates it.
	Exists bool `json:"exists"`
	// Current is the stamped version ("2.0.0" when unstamped); empty if missing.
	Current string `json:"current"`
	Target  string `json:"target"`
	// Pending lists the versions Up would step through, in order.
	Pending []string `json:"pending"`
	// LegacyRunsColumn reports the sessions table's 2.x `runs` column.
	LegacyRunsColumn bool `json:"legacy_runs_column"`
	// RowsWithRuns counts sessions whose `runs` holds something other than SQL
	// NULL or JSON null (sessions only; 0 elsewhere).
	RowsWithRuns int64 `json:"rows_with_runs"`
	// CopyCheckpoint is the last session id an interrupted copy committed.
	CopyCheckpoint string `json:"copy_checkpoint"`
	// DownInterrupted reports a sessions table stamped 3.0.0 whose step
	// down stopped after it wrote every run back into the legacy column
	// and dropped the runs table (sessions only). Only bookkeeping is
	// left: run Down to 2.5.6 (or lower) again to finish it; Up refuses
	// with ErrDownInterrupted until then. A runs table missing without
	// that down's record is a *SchemaMismatchError instead.
	DownInterrupted bool `json:"down_interrupted"`
	// BadRowsRecorded counts the rows and runs recorded in the errors table
	// (agno_migration_errors) as not migratable (sessions only). Up rechecks
	// them; a record goes once its session migrates or is gone.
	BadRowsRecorded int64 `json:"bad_rows_recorded"`
	// Uncopied counts the legacy runs the runs table does not hold, or
	// holds an older version of (Status only, sessions at 3.0.0 with the
	// legacy column: it reads the whole column). They are runs a 2.x
	// process wrote or changed after Up, which the next Up copies, and runs
	// Up cannot copy (bad rows, run_id conflicts, runs changed on both
	// sides).
	Uncopied
}

// UpToDate reports whether the table needs no step to reach its target.
func (s TableStatus) UpToDate() bool { return len(s.Pending) == 0 }

// Status reports every versioned table against the latest version. A table
// whose layout matches no known version fails with *SchemaMismatchError.
//
// For a sessions table at 3.0.0 that still has the legacy runs column, it
// reads that column and reports the runs the runs table does not hold
// (TableStatus.Uncopied).
func (m *Manager) Status(ctx context.Context) ([]TableStatus, error) {
	sts, err := m.status(ctx, Latest)
	if err != nil {
		return nil, err
	}
	for i, st := range sts {
		if st.Kind != KindSessions || !st.LegacyRunsColumn || st.Current != Latest || st.RowsWithRuns == 0 || st.DownInterrupted {
			continue
		}
		trusted, err := m.legacyTrusted(ctx)
		if err != nil {
			return nil, err
		}
		records, err := m.readLedger(ctx)
		if err != nil {
			return nil, err
		}
		if sts[i].Uncopied, err = m.scanUncopied(ctx, m.cfg.DB, trusted, records); err != nil {
			return nil, err
		}
	}
	return sts, nil
}

// TableVersions is Status without reading the legacy runs column: every
// field but Uncopied (left zero). It is for callers that only need the
// versions, such as choosing between Up and Down; Status's count reads the
// whole column, which on a large 2.x database takes long.
func (m *Manager) TableVersions(ctx context.Context) ([]TableStatus, error) {
	return m.status(ctx, Latest)
}

func (m *Manager) status(ctx context.Context, target string) ([]TableStatus, error) {
	stamped, err := m.readVersions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]TableStatus, 0, len(versioned))
	for _, kind := range versioned {
		st, err := m.tableStatus(ctx, kind, stamped, target)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (m *Manager) tableStatus(ctx context.Context, kind string, stamped map[string]string, target string) (TableStatus, error) {
	db := m.cfg.DB
	table := m.tables.Name(kind)
	st := TableStatus{Kind: kind, Table: table, Target: target}
	ok, err := m.cat.tableExists(ctx, db, table)
	if err != nil || !ok {
		if err == nil && versionIndex(target) == len(Versions)-1 {
			st.Pending = []string{Latest}
		}
		return st, err
	}
	st.Exists = true
	cols, err := m.cat.columns(ctx, db, table)
	if err != nil {
		return st, err
	}
	for _, c := range requiredColumns[kind] {
		if _, ok := cols[c]; !ok {
			return st, &SchemaMismatchError{Table: table, Detail: fmt.Sprintf("column %s is missing; this is not an Agno %s table of any known version", c, kind)}
		}
	}
	st.Current = "2.0.0"
	if v, ok := stamped[table]; ok {
		if versionIndex(v) < 0 {
			return st, &SchemaMismatchError{Table: table, Detail: fmt.Sprintf("stamped with unknown schema version %q (known: %v)", v, Versions)}
		}
		st.Current = v
	}
	if kind == KindSessions {
		_, st.LegacyRunsColumn = cols["runs"]
		if st.LegacyRunsColumn {
			if st.RowsWithRuns, err = m.countRowsWithRuns(ctx, cols["runs"]); err != nil {
				return st, err
			}
		}
		if versionIndex(st.Current) >= versionIndex("3.0.0") {
			ok, err := m.cat.tableExists(ctx, db, m.tables.Runs)
			if err != nil {
				return st, err
			}
			if !ok {
				if st.DownInterrupted, err = m.runsDropMarked(ctx); err != nil {
					return st, err
				}
			}
			if !ok && !st.DownInterrupted {
				return st, &SchemaMismatchError{Table: table, Detail: fmt.Sprintf("stamped %s but runs table %s is missing", st.Current, m.tables.Runs)}
			}
		} else if !st.LegacyRunsColumn {
			// A pre-3.0 sessions table always has runs; without it the layout
			// is unknown unless a 3.0 runs table sits next to it (unstamped 3.0).
			ok, err := m.cat.tableExists(ctx, db, m.tables.Runs)
			if err != nil {
				return st, err
			}
			if !ok {
				return st, &SchemaMismatchError{Table: table, Detail: fmt.Sprintf("no runs column and no runs table %s: matches neither 2.x nor 3.0", m.tables.Runs)}
			}
		}
		if st.CopyCheckpoint, err = m.checkpoint(ctx); err != nil {
			return st, err
		}
		if st.BadRowsRecorded, err = m.countRecordedBad(ctx); err != nil {
			return st, err
		}
	}
	for i := versionIndex(st.Current) + 1; i <= versionIndex(target); i++ {
		st.Pending = append(st.Pending, Versions[i])
	}
	return st, nil
}

// countRowsWithRuns counts sessions whose legacy column holds a value other
// than SQL NULL or JSON null (in any of the encodings Agno wrote), without
// rendering every value as text where the type can say it.
func (m *Manager) countRowsWithRuns(ctx context.Context, colType string) (int64, error) {
	runs := m.quote("runs")
	var notNull string
	if f := m.sd.Migration.JSONNotNull; f != nil {
		notNull = f(runs, colType)
	}
	if notNull == "" { // SQLite text, MariaDB's JSON (a checked LONGTEXT)
		notNull = runs + " NOT IN ('null', '\"null\"')"
	}
	q := fmt.Sprintf("SELECT count(*) FROM %s WHERE %s IS NOT NULL AND %s", m.qualify(m.tables.Sessions), runs, notNull)
	var n int64
	if err := m.cfg.DB.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, fmt.Errorf("migrate: count legacy runs in %s: %w", m.tables.Sessions, err)
	}
	return n, nil
}

// readVersions returns table_name → version; empty when the table is missing.
func (m *Manager) readVersions(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	ok, err := m.cat.tableExists(ctx, m.cfg.DB, m.tables.Versions)
	if err != nil || !ok {
		return out, err
	}
	rows, err := m.cfg.DB.QueryContext(ctx, fmt.Sprintf("SELECT %s, %s FROM %s", m.quote("table_name"), m.quote("version"), m.qualify(m.tables.Versions)))
	if err != nil {
		return nil, &SchemaMismatchError{Table: m.tables.Versions, Detail: fmt.Sprintf("cannot read table_name, version: %v", err)}
	}
	defer rows.Close()
	for rows.Next() {
		var t, v string
		if err := rows.Scan(&t, &v); err != nil {
			return nil, err
		}
		out[t] = v
	}
	return out, rows.Err()
}

// ensureBookkeeping creates the versions, errors, progress and copied-runs
// tables, and brings those an earlier release made up to date.
func (m *Manager) ensureBookkeeping(ctx context.Context, q queryer) error {
	ty := m.sd.Types
	k, s, b, t, charset := ty.Key, ty.Key, ty.BigInt, ty.Text, ty.TableSuffix
	stmts := []string{
		// Binary on MySQL, as the drivers' DDL makes it: table names are
		// case-sensitive there (lower_case_table_names=0), so agno_runs and
		// AGNO_RUNS are two tables whose stamps must not share a key. A
		// versions table Agno created (case-insensitive) is converted below.
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (table_name %s NOT NULL PRIMARY KEY, version %s NOT NULL, created_at %s, updated_at %s)%s",
			m.qualify(m.tables.Versions), k, s, s, s, charset+m.binaryKeys()),
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (table_name %s NOT NULL, session_id %s NOT NULL, position %s NOT NULL, kind %s NOT NULL, detail %s, created_at %s NOT NULL, PRIMARY KEY (table_name, session_id, position))%s",
			m.qualify(m.tables.Errors), k, k, b, s, t, b, charset+m.binaryKeys()),
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (table_name %s NOT NULL PRIMARY KEY, step %s NOT NULL, last_session_id %s NOT NULL, sessions_done %s NOT NULL, runs_copied %s NOT NULL, updated_at %s NOT NULL, deferred_ddl %s)%s",
			m.qualify(m.tables.Progress), k, s, k, b, b, b, t, charset+m.binaryKeys()),
		// Keyed by the runs table the record describes, with run_id:
		// deployments sharing a database share this table
		// (docs/adr/migrate-copy-records-scoped.md).
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (runs_table %s NOT NULL DEFAULT '', run_id %s NOT NULL, digest %s NOT NULL, updated_at %s NOT NULL, row_digest %s, PRIMARY KEY (runs_table, run_id))%s",
			m.qualify(m.tables.CopiedRuns), k, k, b, b, b, charset+m.binaryKeys()),
	}
	if m.sd.Schema != "" {
		stmts = append([]string{"CREATE SCHEMA IF NOT EXISTS " + m.quote(m.sd.Schema)}, stmts...)
	}
	for _, st := range stmts {
		if _, err := q.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("migrate: create bookkeeping tables: %w", err)
		}
	}
	if err := m.addRowDigest(ctx, q); err != nil {
		return err
	}
	// The ids these tables key on are compared as the runs and sessions
	// tables compare them (Up makes sessions.session_id binary on MySQL),
	// and table names as MySQL does (lower_case_table_names=0): in Agno's
	// case-insensitive versions table, stamping AGNO_SESSIONS rewrote
	// agno_sessions's row. Converting to binary never merges two keys.
	for _, tc := range [][2]string{{m.tables.Versions, "table_name"}, {m.tables.Errors, "session_id"}, {m.tables.Progress, "last_session_id"}, {m.tables.CopiedRuns, "run_id"}} {
		if err := m.binaryIDs(ctx, q, tc[0], tc[1]); err != nil {
			return err
		}
	}
	return m.scopeLedger(ctx, q)
}

// addRowDigest adds row_digest to a copied-runs table an earlier release
// made. Its records keep it NULL: they are judged by updated_at alone.
func (m *Manager) addRowDigest(ctx context.Context, q queryer) error {
	cols, err := m.cat.columns(ctx, q, m.tables.CopiedRuns)
	if err != nil {
		return err
	}
	if _, ok := cols["row_digest"]; ok {
		return nil
	}
	if _, err := q.ExecContext(ctx, "ALTER TABLE "+m.qualify(m.tables.CopiedRuns)+" ADD COLUMN row_digest "+m.sd.Types.BigInt); err != nil {
		return fmt.Errorf("migrate: add row_digest to %s: %w", m.tables.CopiedRuns, err)
	}
	return nil
}

// binaryKeys is the table option that makes MySQL compare a table's keys
// byte for byte, as the runs table's run_id (utf8mb4_bin); empty elsewhere,
// where they always do.
func (m *Manager) binaryKeys() string {
	if m.sd.Upsert != sqlstore.OnDuplicateKey {
		return ""
	}
	return " COLLATE=utf8mb4_bin"
}

// binaryIDs converts a MySQL bookkeeping table made with the server's
// default collation (case-insensitive; earlier releases did) to
// utf8mb4_bin, judged by its id column. There, ids differing only in case
// shared a key: the copied-runs record of one run described the other
// (a run Agentry wrote became a conflict, a deleted run came back), and the
// bad rows of sessions "S1" and "s1" at one position were recorded once, and
// cleared together.
func (m *Manager) binaryIDs(ctx context.Context, q queryer, table, column string) error {
	if m.binaryKeys() == "" {
		return nil
	}
	var coll sql.NullString
	err := q.QueryRowContext(ctx, "SELECT collation_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?",
		table, column).Scan(&coll)
	if err != nil {
		return fmt.Errorf("migrate: read the collation of %s.%s: %w", table, column, err)
	}
	if coll.String == "utf8mb4_bin" {
		return nil
	}
	if _, err := q.ExecContext(ctx, "ALTER TABLE "+m.qualify(table)+" CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		return fmt.Errorf("migrate: make %s.%s compare in binary: %w", table, column, err)
	}
	return nil
}

// stamp records table's version.
func (m *Manager) stamp(ctx context.Context, q queryer, table, version string) error {
	if err := sqlstore.Stamp(ctx, q, m.sd, m.tables, table, version); err != nil {
		return fmt.Errorf("migrate: stamp %s at %s: %w", table, version, err)
	}
	return nil
}

func (m *Manager) unstamp(ctx context.Context, q queryer, table string) error {
	_, err := q.ExecContext(ctx, m.q("DELETE FROM "+m.qualify(m.tables.Versions)+" WHERE table_name = ?"), table)
	return err
}

// checkpoint returns the last session id an interrupted copy committed.
func (m *Manager) checkpoint(ctx context.Context) (string, error) {
	ok, err := m.cat.tableExists(ctx, m.cfg.DB, m.tables.Progress)
	if err != nil || !ok {
		return "", err
	}
	var last string
	err = m.cfg.DB.QueryRowContext(ctx, m.q("SELECT last_session_id FROM "+m.qualify(m.tables.Progress)+" WHERE table_name = ?"), m.tables.Sessions).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return last, err
}

func (e *SchemaMismatchError) Unwrap() error { return db.ErrSchemaMismatch }
