package sqltools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
)

func newSet(t *testing.T, cfg Config) *tool.Set {
	t.Helper()
	k, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	kit, err := k.Toolkit()
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(nil, kit)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func call(t *testing.T, set *tool.Set, name, args string) tool.Result {
	t.Helper()
	return set.Execute(context.Background(), model.ToolCall{ID: "c", Name: name, Arguments: args})
}

func query(t *testing.T, set *tool.Set, q string, limit int) (tool.Result, resultWriter) {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"query": q, "limit": limit})
	res := call(t, set, "run_sql_query", string(args))
	var out resultWriter
	if res.Err == nil {
		if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
			t.Fatalf("result %q: %v", res.Content, err)
		}
	}
	return res, out
}

func TestSQL_ListDescribeAndQuery(t *testing.T) {
	fixtures(t, func(t *testing.T, f fixture) {
		set := newSet(t, Config{DSN: f.dsn})
		res := call(t, set, "list_tables", `{}`)
		if res.Err != nil || res.Content != `["big","notes","secrets"]` {
			t.Fatalf("list_tables = %s, %v", res.Content, res.Err)
		}
		res = call(t, set, "describe_table", `{"table_name":"notes"}`)
		var cols []Column
		if res.Err != nil || json.Unmarshal([]byte(res.Content), &cols) != nil || len(cols) != 2 {
			t.Fatalf("describe_table = %s, %v", res.Content, res.Err)
		}
		if cols[0].Name != "id" || !cols[0].Key || cols[1].Name != "body" || cols[1].Nullable || cols[1].Default == nil {
			t.Errorf("columns = %+v", cols)
		}
		res = call(t, set, "describe_table", `{"table_name":"notes; DROP TABLE secrets"}`)
		if res.Err == nil || !strings.Contains(res.Content, "list_tables") {
			t.Errorf("describe of an unknown table: %s", res.Content)
		}
		res, out := query(t, set, "SELECT id, body FROM notes ORDER BY id", 0)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if strings.Join(out.Columns, ",") != "id,body" || len(out.Rows) != 2 || out.Rows[1][1] != "second" || out.Truncated {
			t.Errorf("query = %s", res.Content)
		}
	})
}

func TestSQL_WritesOnlyToAllowWriteTables(t *testing.T) {
	fixtures(t, func(t *testing.T, f fixture) {
		set := newSet(t, Config{DSN: f.dsn, AllowWrite: []string{"notes"}})
		for _, q := range []string{
			"INSERT INTO notes (id, body) VALUES (3, 'third')",
			"UPDATE notes SET body = 'changed' WHERE id = 1",
			"UPDATE notes AS n SET body = (SELECT token FROM secrets WHERE id = 1) WHERE n.id = 2", // reads another table
			"DELETE FROM notes WHERE id = 3",
		} {
			res, out := query(t, set, q, 0)
			if res.Err != nil || out.RowsAffected == nil || *out.RowsAffected != 1 {
				t.Errorf("%s: %s %v", q, res.Content, res.Err)
			}
		}
		if n := f.count(t, "SELECT COUNT(*) FROM notes WHERE body = 'changed'"); n != 1 {
			t.Errorf("update not committed: %d rows changed", n)
		}
		if f.dialect != MySQL { // MySQL has no RETURNING (MariaDB does)
			res, out := query(t, set, "INSERT INTO notes (id, body) VALUES (7, 'seven') RETURNING id", 0)
			if res.Err != nil || len(out.Rows) != 1 {
				t.Errorf("INSERT ... RETURNING: %s %v", res.Content, res.Err)
			}
		}
	})
}

// TestSQL_InjectionAttemptsFail is the bad-input table: every statement must
// be refused (by the gate or by the engine) and change nothing.
func TestSQL_InjectionAttemptsFail(t *testing.T) {
	fixtures(t, func(t *testing.T, f fixture) {
		marker := tempFile(t, "pwned")
		readOnly := newSet(t, Config{DSN: f.dsn})
		notesOnly := newSet(t, Config{DSN: f.dsn, AllowWrite: []string{"notes"}})
		attacks := []string{
			"SELECT 1; DROP TABLE secrets",
			"SELECT 1; DELETE FROM secrets;",
			"DROP TABLE secrets",
			"DELETE FROM secrets",
			"UPDATE secrets SET token = 'x'",
			"INSERT INTO secrets (id, token) VALUES (9, 'x')",
			"WITH d AS (DELETE FROM secrets RETURNING *) SELECT * FROM d",
			"WITH x AS (SELECT 1) DELETE FROM secrets",
			"WITH x AS (SELECT 1) UPDATE secrets SET token = 'x'",
			"ATTACH DATABASE '" + marker + "' AS evil",
			"PRAGMA writable_schema = 1",
			"PRAGMA query_only = 0",
			"VACUUM INTO '" + marker + "'",
			"COPY (SELECT 1) TO PROGRAM 'touch " + marker + "'",
			"COPY secrets TO '" + marker + "'",
			"SELECT * FROM secrets INTO OUTFILE '" + marker + "'",
			"SELECT token INTO DUMPFILE '" + marker + "' FROM secrets",
			// MySQL's -- starts a comment only before a space: 0--1 is 0 - -1.
			"SELECT token FROM secrets WHERE id IN (0--1) INTO OUTFILE '" + marker + "'",
			"SELECT token FROM secrets WHERE id IN (0--1) INTO DUMPFILE '" + marker + "'",
			"/*!50000 DROP TABLE secrets */",
			"SELECT 1 /*! ; DROP TABLE secrets */",
			"SELECT 1 -- harmless\n; DROP TABLE secrets",
			"SELECT 'a'';DROP TABLE secrets",
			"CREATE TABLE evil (x INTEGER)",
			"CREATE TEMP TABLE evil (x INTEGER)",
			"ALTER TABLE secrets ADD COLUMN x INTEGER",
			"TRUNCATE secrets",
			"SET TRANSACTION READ WRITE",
			"BEGIN",
			"COMMIT",
			"GRANT ALL ON secrets TO PUBLIC",
			"SELECT * INTO evil FROM secrets",
			"DO $$ BEGIN DELETE FROM secrets; END $$",
			"CALL evil()",
			"LOAD DATA INFILE '/etc/passwd' INTO TABLE secrets",
			"SELECT load_extension('/tmp/evil')",
			"HANDLER secrets OPEN",
			"(DELETE FROM secrets)",
			"",
			"   ;  ",
		}
		writes := []string{ // with notes writable, these still must not touch secrets
			"UPDATE notes, secrets SET secrets.token = 'x'",
			"UPDATE notes JOIN secrets ON 1 = 1 SET secrets.token = 'x'",
			"UPDATE notes n JOIN secrets s ON 1 = 1 SET s.token = 'x'",
			"DELETE secrets FROM notes JOIN secrets ON 1 = 1",
			"DELETE notes, secrets FROM notes JOIN secrets ON 1 = 1",
			"DELETE FROM notes, secrets USING notes JOIN secrets ON 1 = 1",
			// MySQL's multi-table DELETE: the name after FROM is an alias
			// of a table in USING, here secrets.
			"DELETE FROM notes USING secrets AS notes WHERE 1 = 1",
			"DELETE FROM notes USING notes AS x JOIN secrets AS notes ON 1 = 1",
			"DELETE QUICK FROM notes USING secrets notes",
			"INSERT INTO secrets SELECT * FROM notes",
			"INSERT INTO notes (id, body) VALUES (50, 'x'); DELETE FROM secrets",
			"REPLACE INTO secrets (id, token) VALUES (1, 'x')",
			"UPDATE main.secrets SET token = 'x'",
			"UPDATE \"secrets\" SET token = 'x'",
			"UPDATE `secrets` SET token = 'x'",
			"UPDATE notes SET body = 'x' WHERE id = 1; UPDATE secrets SET token = 'x'",
			// Postgres nests block comments; a gate that ends the comment at
			// the first */ would see notes as the target.
			"DELETE FROM /* /* */ notes WHERE */ secrets",
			"UPDATE /* /* */ notes SET */ secrets SET token = 'x'",
			"INSERT INTO /* /* */ notes (id, body) SELECT */ secrets (id, token) VALUES (9, 'x')",
			"INSERT INTO notes WITH d AS (DELETE FROM secrets RETURNING id, token) SELECT * FROM d",
			"UPDATE notes SET body = 'x' WHERE id IN (WITH d AS (DELETE FROM secrets RETURNING id) SELECT id FROM d)",
			"DELETE FROM notes WHERE id IN (WITH d AS (UPDATE secrets SET token = 'x' RETURNING id) SELECT id FROM d)",
			"INSERT INTO notes (id, body) VALUES (60, 'trigger')", // SQLite: a trigger writes secrets (see below)
		}
		if f.dialect == SQLite {
			f.exec(t, "CREATE TRIGGER notes_spill AFTER INSERT ON notes WHEN NEW.body = 'trigger' BEGIN UPDATE secrets SET token = 'spilled'; END")
		} else {
			writes = writes[:len(writes)-1]
		}
		check := func(set *tool.Set, q string) {
			t.Helper()
			res, _ := query(t, set, q, 0)
			if res.Err == nil {
				t.Errorf("%q succeeded: %s", q, res.Content)
			}
		}
		for _, q := range attacks {
			check(readOnly, q)
			check(notesOnly, q)
		}
		for _, q := range writes {
			check(notesOnly, q)
		}
		if n := f.count(t, "SELECT COUNT(*) FROM secrets WHERE token = 's3cr3t'"); n != 1 {
			t.Errorf("secrets changed: %d intact rows", n)
		}
		if n := f.count(t, "SELECT COUNT(*) FROM notes"); n != 2 {
			t.Errorf("notes has %d rows, want 2", n)
		}
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused statement created %s", marker)
		}
	})
}

func TestSQL_HugeOutputsAreCapped(t *testing.T) {
	fixtures(t, func(t *testing.T, f fixture) {
		set := newSet(t, Config{DSN: f.dsn, MaxRows: 50, MaxOutput: 4000})
		res, out := query(t, set, "SELECT id, payload FROM big ORDER BY id", 10_000)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if len(out.Rows) > 50 || !out.Truncated || len(res.Content) > 4500 {
			t.Errorf("%d rows, truncated %v, %d bytes: not capped", len(out.Rows), out.Truncated, len(res.Content))
		}
		res, out = query(t, set, "SELECT payload FROM big WHERE id = 1000", 1)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		cell, _ := out.Rows[0][0].(string)
		if len(cell) > maxCellBytes+100 || !strings.Contains(cell, "more bytes]") {
			t.Errorf("a 60,000-byte cell came back as %d bytes", len(cell))
		}
		res, _ = query(t, set, "SELECT id FROM big", -1)
		if res.Err == nil {
			t.Error("negative limit accepted")
		}
		res, _ = query(t, set, "SELECT '"+strings.Repeat("q", 70_000)+"'", 1)
		if res.Err == nil {
			t.Error("a 70 kB query was run")
		}
	})
}

func TestSQL_SlowQueryTimesOut(t *testing.T) {
	slow := map[string]string{
		SQLite:   "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
		Postgres: "SELECT pg_sleep(30)",
		MySQL:    "SELECT SLEEP(30)",
	}
	fixtures(t, func(t *testing.T, f fixture) {
		set := newSet(t, Config{DSN: f.dsn, Timeout: 300 * time.Millisecond})
		res, _ := query(t, set, slow[f.dialect], 1)
		if !errors.Is(res.Err, tool.ErrTimeout) {
			t.Fatalf("err = %v, want tool.ErrTimeout", res.Err)
		}
		// The connection is usable afterwards.
		set2 := newSet(t, Config{DSN: f.dsn})
		if res, _ := query(t, set2, "SELECT 1", 1); res.Err != nil {
			t.Errorf("after a timeout: %v", res.Err)
		}
	})
}

func TestNew_RefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{},
		{DSN: "oracle://x"},
		{DSN: "/no/such/file.db"},
		{DSN: tempFile(t, "x.db"), AllowWrite: []string{"a; DROP"}},
		{DSN: "mysql://root@127.0.0.1:3306/test", Schema: "public"},
	} {
		if k, err := New(cfg); err == nil {
			k.Close()
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// TestSQL_MySQLFileWritesRefusedInAnySQLMode: with ANSI_QUOTES or
// NO_BACKSLASH_ESCAPES the server ends quoted text where the gate's lexer
// does not, so INTO OUTFILE can hide in what the gate reads as a string.
func TestSQL_MySQLFileWritesRefusedInAnySQLMode(t *testing.T) {
	f := mysqlFixture(t)
	for _, mode := range []string{"ANSI_QUOTES", "NO_BACKSLASH_ESCAPES"} {
		t.Run(mode, func(t *testing.T) {
			cfg, err := mysql.ParseDSN(f.dsn)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Params = map[string]string{"sql_mode": "'" + mode + "'"} // this session only
			marker := tempFile(t, "pwned")
			set := newSet(t, Config{DSN: cfg.FormatDSN()})
			for _, q := range []string{
				`SELECT token AS "a\" FROM secrets INTO OUTFILE '` + marker + `' -- "`,
				`SELECT token, '\' FROM secrets INTO DUMPFILE '` + marker + `' -- '`,
			} {
				res, _ := query(t, set, q, 0)
				if !errors.Is(res.Err, ErrRefused) {
					t.Errorf("%q: %s %v; want ErrRefused", q, res.Content, res.Err)
				}
			}
			if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the server wrote %s", marker)
			}
		})
	}
}
