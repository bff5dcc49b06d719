package mysql_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// openAgnoCollated opens a new database whose tables compare text as the
// tables Agno creates do: utf8mb4_general_ci (case-insensitive, PAD SPACE).
// A database migrated from Agno 2.x keeps them so; migrate converts only
// sessions.session_id (the runs table's foreign key needs utf8mb4_bin).
// Tables are converted whole where no foreign key holds them, and their
// user_id columns in any case.
func openAgnoCollated(t *testing.T) *db.DB {
	t.Helper()
	ctx := context.Background()
	b := make([]byte, 6)
	rand.Read(b)
	name := "agentry_test_ci_" + hex.EncodeToString(b)
	mc, err := mysql.ParseDSN(serverDSN())
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"); err != nil {
		t.Fatalf("mysql test server unavailable: %v\n%s", err, startHint)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	mc.DBName = name
	d, err := mysql.Open(ctx, mysql.Config{DSN: mc.FormatDSN(), MaxOpenConns: 10})
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { d.Close() })

	tables, err := sqlstore.QueryStrings(ctx, admin, "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", name)
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range tables {
		// Fails where a foreign key holds a key column (sessions, runs).
		admin.ExecContext(ctx, "ALTER TABLE `"+name+"`.`"+tbl+"` CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
	}
	rows, err := admin.QueryContext(ctx, "SELECT table_name, column_type, is_nullable FROM information_schema.columns WHERE table_schema = ? AND column_name = 'user_id'", name)
	if err != nil {
		t.Fatal(err)
	}
	type col struct{ table, typ, null string }
	var cols []col
	for rows.Next() {
		var c col
		if err := rows.Scan(&c.table, &c.typ, &c.null); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	rows.Close()
	if len(cols) < 10 {
		t.Fatalf("%d user_id columns, want every user-scoped table's", len(cols))
	}
	for _, c := range cols {
		null := " NULL"
		if c.null == "NO" {
			null = " NOT NULL"
		}
		q := "ALTER TABLE `" + name + "`.`" + c.table + "` MODIFY user_id " + c.typ + " CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci" + null
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var same int
	if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = ? AND column_name = 'user_id' AND collation_name = 'utf8mb4_general_ci'", name).Scan(&same); err != nil || same != len(cols) {
		t.Fatalf("user_id columns in utf8mb4_general_ci: %d of %d (%v)", same, len(cols), err)
	}
	return d
}

// On Agno's case-insensitive tables "Alice" and "alice " are still other
// users than "alice": the user scope compares bytes.
func TestUserScope_ExactOnAgnoCollation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ owner, other string }{
		{"alice", "Alice"}, {"Alice", "alice"}, {"alice", "ALICE"}, {"alice", "alice "},
	} {
		t.Run(c.owner+"|"+c.other, func(t *testing.T) {
			t.Parallel()
			dbtest.UserExactness(t, openAgnoCollated(t), c.owner, c.other)
		})
	}
}

// On Agno's case-insensitive tables, metrics count "Alice"'s and "alice"'s
// sessions apart, as they count their runs.
func TestMetrics_SessionCountsExactOnAgnoCollation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openAgnoCollated(t)
	at := int64(1773100800) // 2026-03-10 UTC
	for i, u := range []string{"Alice", "alice", "alice", "ALICE"} {
		if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s" + string(rune('0'+i)), SessionType: "agent", UserID: u, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	md, ok := d.Driver().(db.MetricsDriver)
	if !ok {
		t.Fatal("the mysql driver stores no metrics")
	}
	counts, err := md.SessionCountsIn(ctx, at, at+86400)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, c := range counts {
		got[c.UserID] += c.Count
	}
	want := map[string]int64{"Alice": 1, "alice": 2, "ALICE": 1}
	if len(got) != len(want) || got["Alice"] != 1 || got["alice"] != 2 || got["ALICE"] != 1 {
		t.Fatalf("session counts by user = %v, want %v", got, want)
	}
}
