package sqltools

import (
	"errors"
	"testing"
)

func TestClassify_FindsTheOneWriteTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dialect, sql string
		write        bool
		table        string
	}{
		{Postgres, "select 1", false, ""},
		{Postgres, "  (SELECT 1) ;  ", false, ""},
		{Postgres, "WITH x AS (SELECT 1) SELECT * FROM x", false, ""},
		{MySQL, "SHOW TABLES", false, ""},
		{SQLite, "EXPLAIN QUERY PLAN SELECT 1", false, ""},
		{Postgres, "INSERT INTO Notes (a) VALUES (1)", true, "notes"},
		{Postgres, `INSERT INTO public."Notes" VALUES (1)`, true, "public.Notes"},
		{MySQL, "INSERT IGNORE INTO `Notes` SET a = 1", true, "Notes"},
		{SQLite, "INSERT OR REPLACE INTO [notes] VALUES (1)", true, "notes"},
		{SQLite, "REPLACE INTO notes VALUES (1)", true, "notes"},
		{Postgres, "UPDATE ONLY notes AS n SET a = 1 FROM other WHERE n.id = other.id", true, "notes"},
		{MySQL, "UPDATE LOW_PRIORITY notes SET a = 'x;y' WHERE b = \"it\\\"s\"", true, "notes"},
		{Postgres, "DELETE FROM notes USING other WHERE notes.id = other.id RETURNING *", true, "notes"},
		{MySQL, "DELETE QUICK FROM notes WHERE id = 1 ORDER BY id LIMIT 1", true, "notes"},
		{Postgres, "DELETE FROM notes n", true, "notes"},
		{Postgres, "/* a comment */ -- another\n DELETE FROM notes WHERE body = $$; DROP TABLE x$$", true, "notes"},
		{Postgres, "UPDATE notes SET body = E'\\'; DROP TABLE x; --'", true, "notes"},
		{Postgres, "DELETE FROM /* /* */ notes WHERE */ secrets", true, "secrets"}, // Postgres nests comments
		{SQLite, "DELETE FROM /* /* */ notes", true, "notes"},                      // SQLite and MySQL do not
		{MySQL, "DELETE FROM /* /* */ notes", true, "notes"},
	}
	for _, tc := range tests {
		st, err := classify(tc.dialect, tc.sql)
		if err != nil {
			t.Errorf("%s %q: %v", tc.dialect, tc.sql, err)
			continue
		}
		if st.write != tc.write || st.table.String() != tc.table {
			t.Errorf("%s %q: write %v table %q, want %v %q", tc.dialect, tc.sql, st.write, st.table, tc.write, tc.table)
		}
	}
}

func TestClassify_RefusesWhatItCannotPlace(t *testing.T) {
	t.Parallel()
	tests := []struct{ dialect, sql string }{
		{Postgres, "SELECT 1; SELECT 2"},
		{Postgres, "SELECT 'unterminated"},
		{Postgres, "SELECT $tag$ unterminated"},
		{Postgres, "SELECT /* unterminated"},
		{Postgres, "SELECT 1 /* nested /* comment */ still open"},
		{MySQL, "SELECT 'it\\'s'; DROP TABLE x"},
		{MySQL, "SELECT 1 # comment\n; DROP TABLE x"},
		{MySQL, "SELECT /*!32302 1; DROP TABLE x */"},
		{MySQL, "SELECT /*M!100000 1 */"},
		{MySQL, "SELECT 1 INTO OUTFILE '/tmp/x'"},
		{MySQL, "SELECT 2--1 INTO OUTFILE '/tmp/x'"}, // 2 - -1: MySQL needs a space after --
		{MySQL, "SELECT LOAD_FILE('/etc/passwd')"},
		{MySQL, "SELECT load_file(concat('/etc/', 'shadow')) AS x"},
		{MySQL, "SELECT 1 --\tx\n; DROP TABLE x"},
		{Postgres, "COPY x TO PROGRAM 'id'"},
		{SQLite, "ATTACH 'x' AS y"},
		{SQLite, "PRAGMA writable_schema=1"},
		{SQLite, "VACUUM INTO '/tmp/x'"},
		{MySQL, "UPDATE a, b SET b.x = 1"},
		{MySQL, "UPDATE a JOIN b ON 1 SET b.x = 1"},
		{MySQL, "DELETE b FROM a JOIN b"},
		{MySQL, "DELETE FROM a, b USING a JOIN b"},
		{MySQL, "DELETE FROM a USING b AS a"}, // a names b
		{MySQL, "DELETE FROM a x USING b AS x"},
		{MySQL, "INSERT a VALUES (1)"},
		{Postgres, "DELETE FROM a.b.c.d"},
		{Postgres, "(DELETE FROM a)"},
		{Postgres, "123"},
		// The server-side bound on a query is a session setting; SET in any
		// form is not run, so the model cannot lift it.
		{Postgres, "SET statement_timeout = 0"},
		{Postgres, "SET LOCAL lock_timeout TO 0"},
		{Postgres, "RESET statement_timeout"},
		{MySQL, "SET SESSION max_statement_time = 0"},
		{MySQL, "SET STATEMENT max_statement_time = 0 FOR SELECT SLEEP(60)"},
		{MySQL, "SET max_execution_time = 0"},
		{Postgres, ""},
	}
	for _, tc := range tests {
		if st, err := classify(tc.dialect, tc.sql); !errors.Is(err, ErrRefused) {
			t.Errorf("%s %q: got %+v, %v; want ErrRefused", tc.dialect, tc.sql, st, err)
		}
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		"SELECT 1", "UPDATE t SET a = 1", "DELETE FROM s.t WHERE x = 'a''b'", "INSERT INTO `t` VALUES (1)",
		"SELECT $a$ x $a$", "SELECT E'\\''", "/*! x */", "SELECT [a] FROM [b]", "WITH x AS (DELETE FROM t) SELECT 1",
		"UPDATE t AS a SET", "DELETE FROM", "SELECT 'x", "\"", "$$", "-- only a comment",
	} {
		for _, d := range []string{SQLite, Postgres, MySQL} {
			f.Add(d, s)
		}
	}
	f.Fuzz(func(t *testing.T, dialect, sql string) {
		st, err := classify(dialect, sql)
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("error %v does not wrap ErrRefused", err)
			}
			return
		}
		if st.write && len(st.table) == 0 {
			t.Fatalf("write %q without a target table", sql)
		}
		if !st.write && st.verb == "" {
			t.Fatalf("read %q without a verb", sql)
		}
	})
}
