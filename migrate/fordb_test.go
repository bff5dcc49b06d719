package migrate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// ForDB migrates a store opened through the db front; a read-only store
// allows Status and dry runs only; the memory driver has no SQL schema.
func TestForDB_ReadOnlyAndNonSQLStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, variants[0])
	f.insert(t, migratetest.Canonical())
	store, err := dsn.Open(ctx, f.path, dsn.Drivers{SQLite: sqlite.OpenDSN}, dsn.Options{ReadOnly: true, SkipSchemaCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m, release, err := migrate.ForDB(store, migrate.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := m.Status(ctx); err != nil {
		t.Errorf("Status on a read-only store: %v", err)
	}
	for name, call := range map[string]func() error{
		"Up":   func() error { _, err := m.Up(ctx, ""); return err },
		"Down": func() error { _, err := m.Down(ctx, "2.5.6"); return err },
		"Cleanup": func() error {
			_, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true})
			return err
		},
	} {
		if err := call(); !errors.Is(err, migrate.ErrReadOnly) {
			t.Errorf("%s on a read-only store = %v, want ErrReadOnly", name, err)
		}
	}
	dry, release2, err := migrate.ForDB(store, migrate.Config{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	defer release2()
	if _, err := dry.Up(ctx, ""); err != nil {
		t.Errorf("dry Up on a read-only store: %v", err)
	}
	if _, _, err := migrate.ForDB(db.New("mem", memory.New()), migrate.Config{}); !errors.Is(err, migrate.ErrNotSQL) {
		t.Errorf("ForDB(memory) = %v, want ErrNotSQL", err)
	}
}
