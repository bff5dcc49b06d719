package sqltools

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	sqlite "modernc.org/sqlite"
)

// sqliteEngine reads through a mode=ro connection pool and, when tables are
// writable, writes through a second pool. Both carry an authorizer, SQLite's
// own per-statement access check, so the policy holds whatever the SQL says:
// reads may touch only tables, a few schema pragmas and ordinary functions;
// writes only the allowed tables of the main database.
type sqliteEngine struct {
	ro, rw *sql.DB
}

// schemaPragmas are the pragmas a read may use (describe_table uses
// table_info); none of them changes anything.
var schemaPragmas = []string{"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list", "table_list"}

// deniedFunctions reach outside the database file.
var deniedFunctions = []string{"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}

// openSQLite opens the SQLite file at path (as db/dsn gives it).
func openSQLite(path string, allowWrite []string) (*sqliteEngine, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("sqltools: sqlite file %q: %w (the sql toolkit never creates a database)", path, err)
	}
	allowed := map[string]bool{}
	for _, t := range allowWrite {
		t = strings.ToLower(strings.TrimSpace(t))
		t = strings.TrimPrefix(t, "main.")
		allowed[t] = true
	}
	ro, err := sqliteDB(path, "ro", func(action sqlite.AuthorizerActionCode, a1, a2, dbName, _ string) sqlite.AuthorizerReturnCode {
		return readPolicy(action, a1, a2)
	})
	if err != nil {
		return nil, err
	}
	e := &sqliteEngine{ro: ro}
	if len(allowed) > 0 {
		e.rw, err = sqliteDB(path, "rw", func(action sqlite.AuthorizerActionCode, a1, a2, dbName, _ string) sqlite.AuthorizerReturnCode {
			switch action {
			case sqlite.AuthInsert, sqlite.AuthUpdate, sqlite.AuthDelete:
				if dbName == "main" && allowed[strings.ToLower(a1)] {
					return sqlite.AuthorizerOK
				}
				return sqlite.AuthorizerDeny
			}
			return readPolicy(action, a1, a2)
		})
		if err != nil {
			ro.Close()
			return nil, err
		}
	}
	return e, nil
}

func readPolicy(action sqlite.AuthorizerActionCode, a1, a2 string) sqlite.AuthorizerReturnCode {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRead, sqlite.AuthRecursive, sqlite.AuthTransaction:
		return sqlite.AuthorizerOK
	case sqlite.AuthFunction:
		if slices.Contains(deniedFunctions, strings.ToLower(a2)) {
			return sqlite.AuthorizerDeny
		}
		return sqlite.AuthorizerOK
	case sqlite.AuthPragma:
		if slices.Contains(schemaPragmas, strings.ToLower(a1)) {
			return sqlite.AuthorizerOK
		}
	}
	return sqlite.AuthorizerDeny
}

// authConnector installs the authorizer on every connection the pool opens.
type authConnector struct {
	driver.Connector
	fn sqlite.AuthorizerFn
}

func (c authConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	r, ok := conn.(sqlite.AuthorizerRegisterer)
	if !ok {
		conn.Close()
		return nil, errors.New("sqltools: the sqlite driver offers no authorizer")
	}
	if err := r.RegisterAuthorizer(c.fn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("sqltools: installing the authorizer: %w", err)
	}
	return conn, nil
}

func sqliteDB(path, mode string, fn sqlite.AuthorizerFn) (*sql.DB, error) {
	q := url.Values{"mode": {mode}, "_pragma": {"busy_timeout(5000)"}}
	if mode == "ro" {
		q.Set("_query_only", "1")
	}
	c, err := sqlite.NewConnector("file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqltools: sqlite %q: %w", path, err)
	}
	return sql.OpenDB(authConnector{Connector: c, fn: fn}), nil
}

func (e *sqliteEngine) close() error {
	err := e.ro.Close()
	if e.rw != nil {
		err = errors.Join(err, e.rw.Close())
	}
	return err
}

// privileges: a SQLite file has no users; the authorizer bounds a query.
func (e *sqliteEngine) privileges(context.Context) (string, []string, error) { return "", nil, nil }

func (e *sqliteEngine) listTables(ctx context.Context) ([]string, error) {
	return queryStrings(ctx, e.ro, `SELECT name FROM sqlite_schema WHERE type IN ('table','view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
}

func (e *sqliteEngine) describeTable(ctx context.Context, table string) ([]Column, error) {
	rows, err := e.ro.QueryContext(ctx, `SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []Column
	for rows.Next() {
		var c Column
		var notNull, pk int
		var def sql.NullString
		if err := rows.Scan(&c.Name, &c.Type, &notNull, &def, &pk); err != nil {
			return nil, err
		}
		c.Nullable, c.Key = notNull == 0 && pk == 0, pk > 0
		if def.Valid {
			c.Default = &def.String
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

func (e *sqliteEngine) run(ctx context.Context, st statement, query string, out *resultWriter) error {
	db := e.ro
	if st.write {
		db = e.rw
	}
	return runSQL(ctx, db, &sql.TxOptions{}, st, query, out, nil)
}

// stoppedAtBound is false: a SQLite query has no server; the call's context
// interrupts it (sqlite3_interrupt) when the call ends.
func (e *sqliteEngine) stoppedAtBound(error) bool { return false }

// txStarter is a *sql.DB or one of its *sql.Conn.
type txStarter interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// runSQL runs one statement in a transaction on a database/sql pool or
// connection: reads are rolled back, writes committed. stopped, when not
// nil, is asked after the statement (and before a commit) whether the
// server stopped it without an error.
func runSQL(ctx context.Context, db txStarter, opts *sql.TxOptions, st statement, query string, out *resultWriter, stopped func(context.Context, *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if st.write && !st.returning {
		res, err := tx.ExecContext(ctx, query)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		out.affected(n)
	} else {
		rows, err := tx.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		if err := collect(rows, out); err != nil {
			return err
		}
	}
	if stopped != nil {
		if err := stopped(ctx, tx); err != nil {
			return err
		}
	}
	if st.write {
		return tx.Commit()
	}
	return nil
}

// collect reads rows into out until out is full, then closes them.
func collect(rows *sql.Rows, out *resultWriter) error {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	out.Columns = cols
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if !out.add(vals) {
			break
		}
	}
	return rows.Err()
}

func queryStrings(ctx context.Context, db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
