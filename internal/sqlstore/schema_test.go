package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// TestCheckSchema_OlderKnownVersionRequiresMigration: a table lacking only
// columns a known version added is at an older version (migration required);
// one lacking anything else matches no version (schema mismatch).
func TestCheckSchema_OlderKnownVersionRequiresMigration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		kind     string
		drop     []string
		required bool   // ErrMigrationRequired, else only ErrSchemaMismatch
		mention  string // in the message
	}{
		{"memories before 2.3.0", sqlstore.KindMemories, []string{"created_at", "feedback"}, true, "2.3.0"},
		{"memories without feedback only", sqlstore.KindMemories, []string{"feedback"}, true, "2.3.0"},
		{"metrics before 3.0.0", sqlstore.KindMetrics, []string{"user_id"}, true, "3.0.0"},
		{"evals before 3.0.0", sqlstore.KindEvals, []string{"user_id"}, true, "3.0.0"},
		{"knowledge before 3.0.0", sqlstore.KindKnowledge, []string{"user_id"}, true, "3.0.0"},
		{"memories before 2.3.0 lacking a column no version added", sqlstore.KindMemories, []string{"created_at", "topics"}, false, "topics"},
		{"evals lacking eval_type", sqlstore.KindEvals, []string{"eval_type"}, false, "eval_type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			sqlDB, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "db.sqlite"))
			if err != nil {
				t.Fatal(err)
			}
			defer sqlDB.Close()
			d := sqlite.Dialect()
			tables := sqlstore.Tables{}.WithDefaults()
			if err := sqlstore.CreateTables(ctx, sqlDB, d, tables, sqlstore.Kinds); err != nil {
				t.Fatal(err)
			}
			cols := slices.DeleteFunc(sqlstore.Columns30(tc.kind), func(c string) bool { return slices.Contains(tc.drop, c) })
			name := tables.Name(tc.kind)
			for _, s := range []string{"DROP TABLE " + d.Table(name), "CREATE TABLE " + d.Table(name) + " (" + strings.Join(cols, ", ") + ")"} {
				if _, err := sqlDB.Exec(s); err != nil {
					t.Fatal(err)
				}
			}
			_, err = sqlstore.CheckSchema(ctx, sqlDB, d, tables)
			if !errors.Is(err, db.ErrSchemaMismatch) || errors.Is(err, db.ErrMigrationRequired) != tc.required {
				t.Fatalf("sqlstore.CheckSchema = %v, want migration required = %v", err, tc.required)
			}
			if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("sqlstore.CheckSchema = %v, want it to name %s and %s", err, name, tc.mention)
			}
			if tc.required && !strings.Contains(err.Error(), "agentry migrate up") {
				t.Errorf("sqlstore.CheckSchema = %v, want it to name `agentry migrate up`", err)
			}
		})
	}
}
