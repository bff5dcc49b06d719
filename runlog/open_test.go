package runlog_test

import (
	"context"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/runlog"
)

// TestOpen_ReplicasOpeningANewDatabaseTogether: servers that open the
// event log of a new Postgres database at the same moment (replicas
// started together, or one server's first background runs of two
// components) all open it. Before, Postgres's CREATE TABLE / CREATE INDEX
// IF NOT EXISTS let two sessions create the table at once and the later
// failed on the catalog's unique index (pg_type_typname_nsp_index): that
// server's run went unrecorded, its events lost for streaming and resume.
// Four new databases, six openers each on two handles.
func TestOpen_ReplicasOpeningANewDatabaseTogether(t *testing.T) {
	t.Parallel()
	for range 4 {
		a, b := testdbs.AllTwins["postgres"](t)
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			d := a
			if i%2 == 1 {
				d = b
			}
			wg.Go(func() { _, errs[i] = runlog.Open(context.Background(), d) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("open: %v", err)
			}
		}
	}
}
