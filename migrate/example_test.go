package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/migrate"
)

// The shape of `agentry migrate status|up|cleanup`: open by DSN through the
// db front (linking only the SQLite driver here), report, migrate with a
// progress line per batch, then drop the legacy column.
func Example() {
	ctx := context.Background()
	store, err := dsn.Open(ctx, "./agno.db", dsn.Drivers{SQLite: sqlite.OpenDSN},
		dsn.Options{SkipSchemaCheck: true, MustExist: true}) // a 2.x database: skip the 3.0 schema check
	if err != nil {
		log.Fatal(err) // a missing file, an unreachable server, an incomplete DSN
	}
	defer store.Close()
	m, release, err := migrate.ForDB(store, migrate.Config{
		Progress: func(p migrate.Progress) {
			fmt.Printf("\r%d/%d sessions, %d runs, %.0f runs/s", p.SessionsDone, p.SessionsTotal, p.RunsCopied, p.RunsPerSecond)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer release()
	status, err := m.Status(ctx)
	if err != nil {
		log.Fatal(err) // *migrate.SchemaMismatchError for a layout no version matches
	}
	for _, s := range status {
		fmt.Println(s.Table, s.Current, "→", s.Target, s.Pending)
	}
	sum, err := m.Up(ctx, "") // "" = migrate.Latest; rerun after any crash
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("\ncopied %d runs, %d not migratable (see agno_migration_errors)\n", sum.RunsCopied, sum.BadRowCount)
	res, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{})
	if errors.Is(err, migrate.ErrLegacyRunsRemain) {
		fmt.Println("legacy runs kept as a backup; cleanup --force drops them")
	} else if err == nil && res.AlreadyGone {
		fmt.Println("legacy runs column already gone")
	}
}
