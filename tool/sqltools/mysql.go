package sqltools

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentryhq/agentry/db/dsn"
)

// mysqlEngine runs on MySQL or MariaDB. Multi-statement mode stays off, so
// the server refuses a second statement in one call.
type mysqlEngine struct {
	db      *sql.DB
	timeout time.Duration
	mariaDB atomic.Int32 // 0 unknown, 1 MariaDB, 2 MySQL
}

func openMySQL(dsnText string, timeout time.Duration) (*mysqlEngine, error) {
	d, err := dsn.Parse(dsnText)
	if err != nil {
		return nil, fmt.Errorf("sqltools: %w", err)
	}
	if d.Dialect != dsn.MySQL {
		return nil, fmt.Errorf("sqltools: %s is a %s DSN, not MySQL", d, d.Dialect)
	}
	cfg, err := gomysql.ParseDSN(d.Conn)
	if err != nil {
		return nil, fmt.Errorf("sqltools: mysql: invalid DSN: %w", err)
	}
	cfg.MultiStatements = false
	cfg.ParseTime = true
	cfg.AllowAllFiles = false
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("sqltools: mysql: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(4)
	return &mysqlEngine{db: db, timeout: timeout}, nil
}

func (e *mysqlEngine) close() error { return e.db.Close() }

// privileges are the user's global privileges that reach beyond the
// database: the server's files (FILE), other sessions' queries (PROCESS),
// ending them (CONNECTION ADMIN; SUPER, which also sets global variables),
// stopping the server (SHUTDOWN). USER_PRIVILEGES names a grantee
// 'user'@'host'; CURRENT_USER() is user@host, and a user name may hold '@'.
//
// USER_PRIVILEGES holds only the user's own grants. On MariaDB a session
// also holds the privileges of its role (the user's default role, enabled
// at connect) and of the roles granted to that role, which no
// information_schema table lists; SHOW GRANTS lists them for the session's
// role. A role granted but not enabled gives the toolkit's sessions
// nothing: enabling it takes SET ROLE, which the gate refuses.
func (e *mysqlEngine) privileges(ctx context.Context) (string, []string, error) {
	var user string
	if err := e.db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&user); err != nil {
		return "", nil, err
	}
	at := strings.LastIndexByte(user, '@')
	grantee := "'" + user + "'"
	if at >= 0 {
		grantee = "'" + user[:at] + "'@'" + user[at+1:] + "'"
	}
	privs, err := queryStrings(ctx, e.db, `SELECT privilege_type FROM information_schema.user_privileges
		WHERE grantee = ? AND privilege_type IN ('SUPER', 'FILE', 'PROCESS', 'CONNECTION ADMIN', 'SHUTDOWN')
		ORDER BY privilege_type`, grantee)
	if err != nil {
		return "", nil, err
	}
	grants, err := queryStrings(ctx, e.db, "SHOW GRANTS")
	if err != nil {
		return "", nil, err
	}
	for _, g := range grants {
		privs = append(privs, globalPrivileges(g)...)
	}
	slices.Sort(privs)
	return user, slices.Compact(privs), nil
}

// mysqlPrivileged are the global privileges privileges reports.
var mysqlPrivileged = []string{"CONNECTION ADMIN", "FILE", "PROCESS", "SHUTDOWN", "SUPER"}

// globalPrivileges returns the privileges of mysqlPrivileged that one line
// of SHOW GRANTS grants on *.* ("GRANT FILE, PROCESS ON *.* TO `role`";
// ALL PRIVILEGES holds them all). A line granting a role, or privileges on
// a database or table, grants none of them.
func globalPrivileges(grant string) []string {
	list, ok := strings.CutPrefix(grant, "GRANT ")
	if !ok {
		return nil
	}
	list, _, ok = strings.Cut(list, " ON *.* TO ")
	if !ok {
		return nil
	}
	var out []string
	for p := range strings.SplitSeq(list, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "ALL PRIVILEGES" || p == "ALL":
			return slices.Clone(mysqlPrivileged)
		case slices.Contains(mysqlPrivileged, p):
			out = append(out, p)
		}
	}
	return out
}

func (e *mysqlEngine) listTables(ctx context.Context) ([]string, error) {
	return queryStrings(ctx, e.db, `SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name`)
}

func (e *mysqlEngine) describeTable(ctx context.Context, table string) ([]Column, error) {
	rows, err := e.db.QueryContext(ctx, `
		SELECT column_name, column_type, is_nullable = 'YES', column_default, column_key = 'PRI'
		FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?
		ORDER BY ordinal_position`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []Column
	for rows.Next() {
		var c Column
		var def sql.NullString
		if err := rows.Scan(&c.Name, &c.Type, &c.Nullable, &def, &c.Key); err != nil {
			return nil, err
		}
		if def.Valid {
			c.Default = &def.String
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

func (e *mysqlEngine) run(ctx context.Context, st statement, query string, out *resultWriter) error {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return err
	}
	// The session ends with the call: a user-level lock (GET_LOCK) or a user
	// variable survives a rollback, and on a pooled connection would outlive
	// the call.
	defer discard(conn)
	mariaDB, err := e.isMariaDB(ctx, conn)
	if err != nil {
		return err
	}
	bound, err := e.bound(ctx, conn, mariaDB)
	if err != nil {
		return err
	}
	var stopped func(context.Context, *sql.Tx) error
	if mariaDB {
		start := time.Now()
		stopped = func(ctx context.Context, tx *sql.Tx) error {
			// Only a statement that ran as long as its bound can have been
			// stopped at it; a quicker one costs no round trip.
			if time.Since(start) < bound {
				return nil
			}
			return mariaDBStopped(ctx, tx)
		}
	}
	return runSQL(ctx, conn, &sql.TxOptions{ReadOnly: !st.write}, st, query, out, stopped)
}

// errStoppedAtBound is a statement MariaDB stopped at max_statement_time
// without an error.
var errStoppedAtBound = errors.New("max_statement_time exceeded: MariaDB stopped the statement and a function that waits in it (GET_LOCK) returned NULL")

// mariaDBStopped reports, as errStoppedAtBound, that the session's
// statement was stopped at max_statement_time even though it answered:
// MariaDB ends a GET_LOCK wait with NULL instead of error 1969. The session
// status counts it (and the session is the call's own, so any count is the
// call's query); the query cannot reset it (FLUSH is refused by the gate).
func mariaDBStopped(ctx context.Context, tx *sql.Tx) error {
	var name string
	var n int64
	if err := tx.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Max_statement_time_exceeded'").Scan(&name, &n); err != nil {
		return fmt.Errorf("checking whether the statement was stopped at its time limit: %w", err)
	}
	if n > 0 {
		return errStoppedAtBound
	}
	return nil
}

// discard closes conn instead of returning it to the pool: database/sql
// drops a connection whose Raw callback reports it bad.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

// bound sets the session's limits on a statement, which end with the
// session: a client that gives up closes the connection, and the server does
// not notice it while the statement waits for a row lock. MariaDB's
// max_statement_time covers every statement and its lock waits. MySQL's
// max_execution_time covers only SELECT, so the lock waits of a write are
// bounded too, in whole seconds. The query cannot change them: SET is
// refused by the gate, and a SELECT cannot assign a system variable.
func (e *mysqlEngine) bound(ctx context.Context, conn *sql.Conn, mariaDB bool) (time.Duration, error) {
	d := serverBound(ctx, e.timeout)
	set := fmt.Sprintf("SET SESSION max_statement_time = %.3f", d.Seconds())
	if !mariaDB {
		secs := int64(math.Ceil(d.Seconds()))
		set = fmt.Sprintf("SET SESSION max_execution_time = %d, lock_wait_timeout = %d, innodb_lock_wait_timeout = %d", d.Milliseconds(), secs, secs)
	}
	_, err := conn.ExecContext(ctx, set)
	return d, err
}

// isMariaDB asks the server once which of the two it is.
func (e *mysqlEngine) isMariaDB(ctx context.Context, conn *sql.Conn) (bool, error) {
	switch e.mariaDB.Load() {
	case 1:
		return true, nil
	case 2:
		return false, nil
	}
	var version string
	if err := conn.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return false, err
	}
	if strings.Contains(strings.ToLower(version), "mariadb") {
		e.mariaDB.Store(1)
		return true, nil
	}
	e.mariaDB.Store(2)
	return false, nil
}

// stoppedAtBound reports the server ending a statement at its time limit
// (MariaDB 1969, MySQL 3024, or MariaDB without an error) or a lock wait at
// its limit (1205).
func (e *mysqlEngine) stoppedAtBound(err error) bool {
	var myErr *gomysql.MySQLError
	return errors.Is(err, errStoppedAtBound) || errors.As(err, &myErr) && (myErr.Number == 1969 || myErr.Number == 3024 || myErr.Number == 1205)
}
