package mysql_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

var ctx = context.Background()

func TestParseDSN_AcceptsURLAndDriverForms(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, addr, user, dbname string }{
		{"mysql://root@127.0.0.1:3306/test", "127.0.0.1:3306", "root", "test"},
		{"mysql://u:p@db.example/app?parseTime=true", "db.example:3306", "u", "app"},
		{"root@tcp(127.0.0.1:3307)/x", "127.0.0.1:3307", "root", "x"},
	}
	for _, c := range cases {
		cfg, err := mysql.ParseDSN(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if cfg.Addr != c.addr || cfg.User != c.user || cfg.DBName != c.dbname || !cfg.ClientFoundRows {
			t.Fatalf("%s: got addr=%s user=%s db=%s foundRows=%v", c.in, cfg.Addr, cfg.User, cfg.DBName, cfg.ClientFoundRows)
		}
	}
}

func TestOpen_UnreachableServerFailsFast(t *testing.T) {
	t.Parallel()
	start := time.Now()
	_, err := mysql.Open(ctx, mysql.Config{DSN: "root@tcp(127.0.0.1:1)/test", ConnectTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "cannot connect") {
		t.Fatalf("error = %v, want a clear connection error", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %s to fail", time.Since(start))
	}
}

func TestOpen_RefusesLegacy2xDatabase(t *testing.T) {
	t.Parallel()
	d := openFresh(t, mysql.Config{})
	st, _ := sqlstore.FromDB(d)
	dsn := mysqlDSNOf(t, st)
	if _, err := st.SQL().ExecContext(ctx, "DROP TABLE agno_runs"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().ExecContext(ctx, "ALTER TABLE agno_sessions ADD COLUMN runs JSON"); err != nil {
		t.Fatal(err)
	}
	_, err := mysql.Open(ctx, mysql.Config{DSN: dsn})
	if !errors.Is(err, db.ErrMigrationRequired) || !strings.Contains(err.Error(), "agentry migrate up") || !strings.Contains(err.Error(), "agno_runs") {
		t.Fatalf("error = %v, want ErrMigrationRequired", err)
	}
	cols, _ := sqlstore.Columns(ctx, st.SQL(), st.SQLDialect(), "agno_runs")
	if len(cols) != 0 {
		t.Fatal("opening a 2.x database recreated agno_runs")
	}
	d2, err := mysql.Open(ctx, mysql.Config{DSN: dsn, SkipSchemaCheck: true})
	if err != nil {
		t.Fatalf("SkipSchemaCheck: %v", err)
	}
	d2.Close()
}

func TestOpen_StampsEveryTableAndUsesJSONColumns(t *testing.T) {
	t.Parallel()
	d := openFresh(t, mysql.Config{})
	st, _ := sqlstore.FromDB(d)
	tables := st.Tables()
	for _, k := range sqlstore.Kinds {
		var version string
		if err := st.SQL().QueryRowContext(ctx, "SELECT version FROM agno_schema_versions WHERE table_name = ?", tables.Name(k)).Scan(&version); err != nil || version != "3.0.0" {
			t.Fatalf("%s: version %q, %v", tables.Name(k), version, err)
		}
	}
	var checks int
	st.SQL().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.referential_constraints WHERE constraint_schema = DATABASE() AND table_name = 'agno_runs' AND delete_rule = 'CASCADE'").Scan(&checks)
	if checks != 1 {
		t.Fatalf("agno_runs has %d cascading foreign keys, want 1", checks)
	}
}

func mysqlDSNOf(t *testing.T, st *sqlstore.Store) string {
	t.Helper()
	var name string
	if err := st.SQL().QueryRowContext(ctx, "SELECT DATABASE()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	mc, err := mysql.ParseDSN(serverDSN())
	if err != nil {
		t.Fatal(err)
	}
	mc.DBName = name
	return mc.FormatDSN()
}

// TestParseDSN_URLParameterWithASlash: a mysql:// URL's parameter may hold
// a '/' (loc=Europe/Paris); the driver gets it, not an "unescaped
// parameter" refusal.
func TestParseDSN_URLParameterWithASlash(t *testing.T) {
	t.Parallel()
	mc, err := mysql.ParseDSN("mysql://root@127.0.0.1:3306/test?loc=Europe/Paris&parseTime=true")
	if err != nil {
		t.Fatal(err)
	}
	if mc.Loc.String() != "Europe/Paris" || mc.DBName != "test" || mc.Addr != "127.0.0.1:3306" {
		t.Fatalf("ParseDSN: loc %s, database %q, address %q; want Europe/Paris, test, 127.0.0.1:3306", mc.Loc, mc.DBName, mc.Addr)
	}
}
