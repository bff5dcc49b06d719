package runlog_test

import (
	"bytes"
	"context"
	"database/sql"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/runlog"
)

// mysqlDatabase is a fresh MySQL/MariaDB database's DSN config and an admin
// connection to it (closed at the test's end).
func mysqlDatabase(t *testing.T) (*gomysql.Config, *sql.DB) {
	t.Helper()
	mc, err := gomysql.ParseDSN(testdbs.MySQLDatabaseDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return mc, admin
}

// openMySQLLog opens the store at mc and its event log.
func openMySQLLog(t *testing.T, mc *gomysql.Config) *runlog.Log {
	t.Helper()
	d, err := mysql.Open(context.Background(), mysql.Config{DSN: mc.FormatDSN(), MaxOpenConns: 4, QueryTimeout: testdbs.QueryTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	l, err := runlog.Open(context.Background(), d)
	if err != nil {
		t.Fatalf("open the log: %v", err)
	}
	return l
}

// latin1EventTable is the event table as an earlier version created it in
// a latin1 database.
var latin1EventTable = []string{`CREATE TABLE agentry_run_events (
	run_id VARCHAR(255) NOT NULL, seq BIGINT NOT NULL, attempt BIGINT NOT NULL, event VARCHAR(255) NOT NULL,
	data LONGTEXT NOT NULL, final SMALLINT NOT NULL DEFAULT 0, created_at BIGINT NOT NULL, PRIMARY KEY (run_id, seq)
) DEFAULT CHARSET=latin1`, `CREATE INDEX idx_agentry_run_events_created_at ON agentry_run_events (created_at)`}

// appendUnicode appends an event of text outside latin1 to run-1 and
// returns its data.
func appendUnicode(t *testing.T, l *runlog.Log) []byte {
	t.Helper()
	data := []byte(`{"event":"RunContent","content":"héllo 😀 中文"}`)
	if err := l.Append(context.Background(), "run-1", 1, []runlog.Pending{{Event: "RunContent", Data: data}}, nil); err != nil {
		t.Fatalf("append: %v", err)
	}
	return data
}

// TestAppend_MySQLDatabaseOfAnotherCharset: on a MySQL/MariaDB database
// whose default character set is not utf8mb4 (latin1, MariaDB's own
// default before 11.6), an event with text outside it (emoji, CJK) is
// stored and read back unchanged, as the store's tables keep it.
func TestAppend_MySQLDatabaseOfAnotherCharset(t *testing.T) {
	t.Parallel()
	mc, admin := mysqlDatabase(t)
	ctx := context.Background()
	if _, err := admin.ExecContext(ctx, "ALTER DATABASE `"+mc.DBName+"` CHARACTER SET latin1 COLLATE latin1_swedish_ci"); err != nil {
		t.Fatal(err)
	}
	l := openMySQLLog(t, mc)
	data := appendUnicode(t, l)
	recs, err := l.Read(ctx, "run-1", -1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || !bytes.Equal(recs[0].Data, data) {
		t.Fatalf("read %+v, want %s", recs, data)
	}
}

// TestOpen_ConvertsAnEventTableOfAnotherCharset: an event table an earlier
// version created in a latin1 database's character set is converted to
// utf8mb4 when the log opens, keeping its events, so that appends of text
// outside latin1 no longer fail.
func TestOpen_ConvertsAnEventTableOfAnotherCharset(t *testing.T) {
	t.Parallel()
	mc, admin := mysqlDatabase(t)
	ctx := context.Background()
	for _, q := range latin1EventTable {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.ExecContext(ctx, `INSERT INTO agentry_run_events VALUES ('run-1', 0, 1, 'RunStarted', ?, 0, 1)`, `{"content":"café"}`); err != nil {
		t.Fatal(err)
	}
	l := openMySQLLog(t, mc)
	data := appendUnicode(t, l)
	recs, err := l.Read(ctx, "run-1", -1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || string(recs[0].Data) != `{"content":"café"}` || !bytes.Equal(recs[1].Data, data) {
		t.Fatalf("read %+v", recs)
	}
}

// TestOpen_KeepsALatin1TableItMayNotAlter: a database user without the
// ALTER privilege still opens a log whose table an earlier version created
// latin1 (it stores the events latin1 holds, as before), instead of every
// background run failing on the conversion.
func TestOpen_KeepsALatin1TableItMayNotAlter(t *testing.T) {
	t.Parallel()
	mc, admin := mysqlDatabase(t) // closed after the user's drop below
	ctx := context.Background()
	store, err := mysql.Open(ctx, mysql.Config{DSN: mc.FormatDSN(), MaxOpenConns: 2}) // the store's tables, as root
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	user := "rl_" + mc.DBName[len(mc.DBName)-12:]
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP USER IF EXISTS '"+user+"'@'127.0.0.1'"); err != nil {
			t.Errorf("drop user %s: %v", user, err)
		}
	})
	for _, q := range append(latin1EventTable, "CREATE USER '"+user+"'@'127.0.0.1'",
		"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, INDEX ON `"+mc.DBName+"`.* TO '"+user+"'@'127.0.0.1'") {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	uc := mc.Clone()
	uc.User, uc.Passwd = user, ""
	l := openMySQLLog(t, uc) // as a user that may not alter its table
	if err := l.Append(ctx, "run-1", 1, []runlog.Pending{{Event: "RunContent", Data: []byte(`{"content":"café"}`)}}, nil); err != nil {
		t.Fatalf("append: %v", err)
	}
}
