package migrate_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// legacyRead is the text of the queries that read the legacy column.
const legacyRead = "ORDER BY session_id LIMIT"

// Status and cleanup read the legacy column a batch at a time without
// asking the server for rows they then throw away: a read that stops on
// BatchBytes with rows left makes the Postgres and MySQL drivers read every
// remaining row off the wire on Close. With a LIMIT of BatchSize sessions and
// batches of a few, that was most of BatchSize sessions of JSON per batch
// (the scan of 1,000 sessions of 100 KB took 18 times the scan of 200 on
// Postgres). Only the first read, whose LIMIT is a guess, may discard rows.
// TableVersions reads none.
func TestStatusAndCleanup_ReadLegacyColumnWithoutDiscardingRows(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		const n, perBatch = 120, 5
		var size int
		for s := range migratetest.Generate(7, n, 4, 1024) {
			size = max(size, len(migratetest.Encode(string(f.dialect), s.Runs).(string)))
		}
		if err := migratetest.Insert(ctx, f.db, f.layout, migratetest.Generate(7, n, 4, 1024)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		d, c := f.countingDB(t, legacyRead)
		m := f.manager(t, func(cfg *migrate.Config) {
			cfg.DB, cfg.BatchSize, cfg.BatchBytes = d, n, perBatch*size
		})
		check := func(what string, wantRead int) {
			t.Helper()
			queries, read, discarded, maxRead := c.take()
			if read != wantRead || discarded >= 64 || maxRead > 2*perBatch+1 {
				t.Errorf("%s: %d reads of the legacy column returned %d sessions (at most %d in one) and discarded %d; want %d sessions, under 64 discarded (the first read's guess), at most %d per read",
					what, queries, read, maxRead, discarded, wantRead, 2*perBatch+1)
			}
		}

		if _, err := m.TableVersions(ctx); err != nil {
			t.Fatal(err)
		}
		check("TableVersions", 0)
		sts, err := m.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range sts {
			if st.Kind == migrate.KindSessions && (st.RowsWithRuns != n || st.UncopiedRuns != 0) {
				t.Fatalf("status = %+v, want %d sessions with runs, all copied", st, n)
			}
		}
		check("Status", n)
		res, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true})
		if err != nil || !res.Dropped {
			t.Fatalf("cleanup = %+v, %v", res, err)
		}
		check("cleanup", n)
	})
}
