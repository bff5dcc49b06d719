package migrate

import (
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// Each driver's DDL holds what the Manager relies on: a section per table
// kind at Latest whose first statement creates the table with every 3.0
// column, the others (the indexes the copy may defer) create indexes, and
// the indexes Down drops carry the names it computes (a unique one may be a
// table constraint). The store's
// ForceIndex hint names the runs (session_id, run_index) index too.
func TestDriverDDL_HoldsWhatMigrateExpects(t *testing.T) {
	t.Parallel()
	tables := Tables{Sessions: "s_tbl"}.WithDefaults()
	for _, d := range []*sqlstore.Dialect{sqlite.Dialect(), postgres.Dialect(""), mysql.Dialect()} {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			if err := d.Check(); err != nil {
				t.Fatal(err)
			}
			for _, k := range sqlstore.Kinds {
				stmts, err := sqlstore.DDL(d, tables, k, Latest)
				if err != nil || len(stmts) == 0 {
					t.Fatalf("%s: %d statements, %v", k, len(stmts), err)
				}
				table := tables.Name(k)
				if !strings.HasPrefix(stmts[0], "CREATE TABLE IF NOT EXISTS "+d.Table(table)+" (") {
					t.Fatalf("%s: first statement does not create %s:\n%s", k, d.Table(table), stmts[0])
				}
				for _, c := range sqlstore.Columns30(k) {
					if !strings.Contains(stmts[0], "\n    "+c+" ") {
						t.Errorf("%s: column %s missing from the CREATE TABLE", k, c)
					}
				}
				var indexes []string
				for _, s := range stmts[1:] {
					name, ok := createdIndex(s)
					if !ok {
						t.Errorf("%s: a statement after the CREATE TABLE is not a CREATE INDEX IF NOT EXISTS:\n%s", k, s)
					}
					indexes = append(indexes, name)
				}
				all := strings.Join(stmts, "\n")
				if strings.Contains(all, "{") && !strings.Contains(all, "'{}'") {
					t.Errorf("%s: unexpanded table name:\n%s", k, all)
				}
				var want []string
				switch k {
				case KindEvals, KindKnowledge:
					want = []string{indexName(table, []string{"user_id"})}
				case KindMetrics:
					want = downDroppedIndexes(table)
				case KindRuns:
					want = []string{indexName(table, []string{"session_id", "run_index"})}
				}
				for _, w := range want {
					// A unique index may be a table constraint (Down drops either).
					if !slices.Contains(indexes, w) && !strings.Contains(stmts[0], "CONSTRAINT "+d.Quote(w)+" UNIQUE") {
						t.Errorf("%s: no index %s (have %v)", k, w, indexes)
					}
				}
			}
			if _, err := sqlstore.DDL(d, tables, "nope", Latest); err == nil {
				t.Error("an unknown table kind has DDL")
			}
			if _, err := sqlstore.DDL(d, tables, KindRuns, "9.9.9"); err == nil {
				t.Error("an unknown version has DDL")
			}
		})
	}
}

// createdIndex returns the unquoted name a CREATE [UNIQUE] INDEX IF NOT
// EXISTS statement gives its index.
func createdIndex(stmt string) (string, bool) {
	for strings.HasPrefix(stmt, "--") { // comment lines before the statement
		_, stmt, _ = strings.Cut(stmt, "\n")
	}
	rest, ok := strings.CutPrefix(stmt, "CREATE INDEX IF NOT EXISTS ")
	if !ok {
		if rest, ok = strings.CutPrefix(stmt, "CREATE UNIQUE INDEX IF NOT EXISTS "); !ok {
			return "", false
		}
	}
	name, _, _ := strings.Cut(rest, " ")
	return strings.Trim(name, "\"`"), true
}

// New refuses a missing or incomplete dialect with ErrIncompleteDialect.
func TestNew_RefusesIncompleteDialect(t *testing.T) {
	t.Parallel()
	sqlDB, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	broken := sqlite.Dialect()
	broken.Catalog.Columns = nil
	for _, d := range []*sqlstore.Dialect{nil, broken} {
		_, err = New(Config{DB: sqlDB, Dialect: d})
		if !errors.Is(err, sqlstore.ErrIncompleteDialect) {
			t.Fatalf("New with %v = %v, want ErrIncompleteDialect", d, err)
		}
	}
}
