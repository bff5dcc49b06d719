package agentfs_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agentfs"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// SweepEvery with an interval that is not positive reports it and returns:
// it panicked in time.NewTicker, taking down the process it ran in.
func TestFS_SweepEveryRefusesANonPositiveInterval(t *testing.T) {
	t.Parallel()
	fs := newFS(t, testdbs.SQLite(t), agentfs.Config{})
	for _, interval := range []int64{0, -1} {
		var got error
		fs.SweepEvery(context.Background(), time.Duration(interval), func(err error) { got = err })
		if got == nil {
			t.Fatalf("interval %d: no error reported", interval)
		}
	}
}
