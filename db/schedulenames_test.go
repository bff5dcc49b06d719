package db_test

import (
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// TestSchedules_ConcurrentWritesOfOneNameAcrossProcessesOneWins: two
// handles with their own pools on one database, as two Agentry processes,
// create (and rename onto) one owner's schedule name at once: one write
// wins, the others are ErrExists. Before, the name was checked and then
// written in two steps: on a table without unique indexes on names (and
// on MySQL for unowned schedules, which its index never covers) several
// writes succeeded; on SQLite the single writer only serialised one
// process's writes. All four drivers.
func TestSchedules_ConcurrentWritesOfOneNameAcrossProcessesOneWins(t *testing.T) {
	t.Parallel()
	testdbs.EachTwins(t, func(t *testing.T, a, b *db.DB) {
		dbtest.RaceScheduleCreates(t, a, b)
		dbtest.RaceScheduleRenames(t, a, b)
	})
}
