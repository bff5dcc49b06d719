package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
)

// Version30 is the schema version this package creates.
const Version30 = "3.0.0"

// KnownVersions are Agno's table schema versions, oldest first.
var KnownVersions = []string{"2.0.0", "2.3.0", "2.5.0", "2.5.6", Version30}

// Querier is what schema helpers need: a *sql.DB, *sql.Conn or *sql.Tx.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ddlSection starts a table kind's section of a DDL file.
const ddlSection = "-- +table "

// DDL returns the statements that create one table kind (with its indexes) at
// a version, for a dialect and table names. Statements use IF NOT EXISTS.
func DDL(d *Dialect, t Tables, kind, version string) ([]string, error) {
	t = t.WithDefaults()
	src, err := fs.ReadFile(d.DDL, version+".sql")
	if err != nil {
		return nil, fmt.Errorf("sqlstore: no %s DDL for version %s", d.Name, version)
	}
	for _, section := range strings.Split(string(src), ddlSection)[1:] {
		name, body, _ := strings.Cut(section, "\n")
		if strings.TrimSpace(name) != kind {
			continue
		}
		var out []string
		for _, stmt := range strings.Split(body, ";\n") {
			stmt = strings.TrimSpace(stmt)
			stmt = strings.TrimSuffix(stmt, ";")
			if stmt == "" {
				continue
			}
			out = append(out, expandNames(d, t, stmt))
		}
		return out, nil
	}
	return nil, fmt.Errorf("sqlstore: unknown table kind %q", kind)
}

func expandNames(d *Dialect, t Tables, stmt string) string {
	for _, k := range Kinds {
		stmt = strings.ReplaceAll(stmt, "{"+k+"_q}", d.Table(t.Name(k)))
		stmt = strings.ReplaceAll(stmt, "{"+k+"}", t.Name(k))
	}
	return stmt
}

// Columns returns the column names of a table; an empty set means the table
// does not exist.
func Columns(ctx context.Context, q Querier, d *Dialect, table string) (map[string]bool, error) {
	types, err := ColumnTypes(ctx, q, d, table)
	if err != nil {
		return nil, err
	}
	cols := make(map[string]bool, len(types))
	for c := range types {
		cols[c] = true
	}
	return cols, nil
}

// ColumnTypes returns a table's lower-case column names mapped to their
// lower-case declared or data type; an empty map means the table does not
// exist.
func ColumnTypes(ctx context.Context, q Querier, d *Dialect, table string) (map[string]string, error) {
	query, args := d.Catalog.Columns(table)
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read columns of %s: %w", table, err)
	}
	defer rows.Close()
	cols := map[string]string{}
	for rows.Next() {
		var c, typ string
		if err := rows.Scan(&c, &typ); err != nil {
			return nil, err
		}
		cols[strings.ToLower(c)] = strings.ToLower(typ)
	}
	return cols, rows.Err()
}

// TableVersion reads a table's stamp from the versions table; ok is false when
// the versions table or the row is missing (Agno: the table is at 2.0.0).
func TableVersion(ctx context.Context, q Querier, d *Dialect, t Tables, table string) (version string, ok bool, err error) {
	t = t.WithDefaults()
	cols, err := Columns(ctx, q, d, t.Versions)
	if err != nil || len(cols) == 0 {
		return "", false, err
	}
	err = q.QueryRowContext(ctx, d.Bind("SELECT version FROM "+d.Table(t.Versions)+" WHERE table_name = ?"), table).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return version, err == nil, err
}

// Stamp records a table's schema version (ISO-8601 timestamps, as Agno).
func Stamp(ctx context.Context, q Querier, d *Dialect, t Tables, table, version string) error {
	t = t.WithDefaults()
	now := time.Now().UTC().Format(time.RFC3339)
	vt := d.Table(t.Versions)
	res, err := q.ExecContext(ctx, d.Bind("UPDATE "+vt+" SET version = ?, updated_at = ? WHERE table_name = ?"), version, now, table)
	if err != nil {
		return fmt.Errorf("sqlstore: stamp %s: %w", table, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	_, err = d.Inserted(q.ExecContext(ctx, d.Bind(d.InsertIgnore(vt, []string{"table_name", "version", "created_at", "updated_at"}, "table_name")), table, version, now, now))
	if err != nil {
		return fmt.Errorf("sqlstore: stamp %s: %w", table, err)
	}
	return nil
}

// CheckSchema inspects the existing tables. It returns the kinds whose tables
// are missing, db.ErrMigrationRequired for a 2.x layout (runs inside the
// sessions table, or a table lacking only columns 3.0 added) and
// db.ErrSchemaMismatch for a layout matching no known version.
func CheckSchema(ctx context.Context, q Querier, d *Dialect, t Tables) (missing []string, err error) {
	t = t.WithDefaults()
	present := map[string]map[string]bool{}
	for _, k := range Kinds {
		cols, err := Columns(ctx, q, d, t.Name(k))
		if err != nil {
			return nil, err
		}
		if len(cols) == 0 {
			missing = append(missing, k)
			continue
		}
		present[k] = cols
	}
	if cols, ok := present[KindSessions]; ok && cols["runs"] {
		if _, ok := present[KindRuns]; !ok {
			return nil, fmt.Errorf("%w: table %s keeps runs in its legacy `runs` column and table %s does not exist",
				db.ErrMigrationRequired, t.Sessions, t.Runs)
		}
		stamped := false
		for _, table := range []string{t.Sessions, t.Runs} {
			v, ok, err := TableVersion(ctx, q, d, t, table)
			if err != nil {
				return nil, err
			}
			stamped = stamped || (ok && v == Version30)
		}
		if !stamped {
			return nil, fmt.Errorf("%w: table %s has a legacy `runs` column and is not stamped %s in %s",
				db.ErrMigrationRequired, t.Sessions, Version30, t.Versions)
		}
	}
	for _, k := range Kinds {
		cols, ok := present[k]
		if !ok {
			continue
		}
		var lack []string
		for _, c := range columns30[k] {
			if !cols[c] {
				lack = append(lack, c)
			}
		}
		if len(lack) == 0 {
			continue
		}
		if versions, ok := addedIn(k, lack); ok {
			return nil, fmt.Errorf("%w: table %s is at an older schema version: it lacks column(s) %s added in Agno %s",
				db.ErrMigrationRequired, t.Name(k), strings.Join(lack, ", "), strings.Join(versions, ", "))
		}
		sort.Strings(lack)
		return nil, fmt.Errorf("%w: table %s matches no known Agno schema version: missing column(s) %s",
			db.ErrSchemaMismatch, t.Name(k), strings.Join(lack, ", "))
	}
	return missing, nil
}

// addedIn returns the versions that added the lacking columns, oldest first;
// ok is false when a known version added none of some column.
func addedIn(kind string, lack []string) (versions []string, ok bool) {
	for _, c := range lack {
		v := addedBy(kind, c)
		if v == "" {
			return nil, false
		}
		if !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
	}
	slices.SortFunc(versions, func(a, b string) int {
		return slices.Index(KnownVersions, a) - slices.Index(KnownVersions, b)
	})
	return versions, true
}

// CreateTables creates the given table kinds at 3.0.0 and stamps them.
func CreateTables(ctx context.Context, q Querier, d *Dialect, t Tables, kinds []string) error {
	t = t.WithDefaults()
	if d.Schema != "" {
		if _, err := q.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+d.Quote(d.Schema)); err != nil {
			return fmt.Errorf("sqlstore: create schema %s: %w", d.Schema, err)
		}
	}
	// The versions table first, so each created table can be stamped.
	ordered := kinds
	if slices.Contains(kinds, KindVersions) {
		ordered = append([]string{KindVersions}, slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k == KindVersions })...)
	} else if len(kinds) > 0 {
		ordered = append([]string{KindVersions}, kinds...)
	}
	for _, k := range ordered {
		stmts, err := DDL(d, t, k, Version30)
		if err != nil {
			return err
		}
		for _, s := range stmts {
			if _, err := q.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("sqlstore: create table %s: %w", t.Name(k), err)
			}
		}
		if slices.Contains(kinds, k) {
			if err := Stamp(ctx, q, d, t, t.Name(k), Version30); err != nil {
				return err
			}
		}
	}
	return nil
}

// EnsureSchema checks the existing layout (CheckSchema) and creates and stamps
// the missing tables, holding a lock so concurrent openers do not race.
func EnsureSchema(ctx context.Context, sqlDB *sql.DB, d *Dialect, t Tables) error {
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if !d.DDLInTx {
		// Each CREATE commits on its own: the lock, held on the
		// connection, is what keeps two openers apart.
		if d.LockSchema != nil {
			release, err := d.LockSchema(ctx, conn, "agentry_schema")
			if err != nil {
				return fmt.Errorf("sqlstore: take the schema lock: %w", err)
			}
			defer release()
		}
		missing, err := CheckSchema(ctx, conn, d, t)
		if err != nil || len(missing) == 0 {
			return err
		}
		return CreateTables(ctx, conn, d, t, missing)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if d.LockSchema != nil {
		release, err := d.LockSchema(ctx, tx, "agentry_schema")
		if err != nil {
			return fmt.Errorf("sqlstore: take the schema lock: %w", err)
		}
		defer release()
	}
	missing, err := CheckSchema(ctx, tx, d, t)
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	if err := CreateTables(ctx, tx, d, t, missing); err != nil {
		return err
	}
	return tx.Commit()
}
