package dbtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

var scheduleNameTests = map[string]func(t *testing.T, d *db.DB){
	"CreateSchedule_ConcurrentCreatesOfOneNameOneWins": func(t *testing.T, d *db.DB) { RaceScheduleCreates(t, d) },
	"EditSchedule_ConcurrentRenamesOntoOneNameOneWins": func(t *testing.T, d *db.DB) { RaceScheduleRenames(t, d) },
}

// RaceScheduleCreates creates schedules of one name at once, for an
// owner and for none, spread over handles (one database): one create
// wins, the others are db.ErrExists. It runs on a table without unique
// indexes on names: MySQL's (user_id, name) never covers unowned
// schedules (NULLs are distinct), and a table another writer created may
// have none.
func RaceScheduleCreates(t *testing.T, handles ...*db.DB) {
	t.Helper()
	withoutScheduleNameIndexes(t, handles[0])
	for _, owner := range []string{"alice", ""} {
		errs := race(8, func(i int) error {
			_, err := handles[i%len(handles)].CreateSchedule(bg, schedule(fmt.Sprintf("c-%s-%d", owner, i), "nightly", owner, int64(i)))
			return err
		})
		checkOneWins(t, "create for owner "+owner, errs)
		equal(t, "schedules named nightly of owner "+owner, countNamed(t, handles[0], "nightly", owner), 1)
	}
}

// RaceScheduleRenames renames schedules onto one name at once, as
// RaceScheduleCreates creates them: one rename wins.
func RaceScheduleRenames(t *testing.T, handles ...*db.DB) {
	t.Helper()
	withoutScheduleNameIndexes(t, handles[0])
	for _, owner := range []string{"alice", ""} {
		const n = 8
		reads := make([]*db.Schedule, n)
		for i := range n {
			s, err := handles[0].CreateSchedule(bg, schedule(fmt.Sprintf("r-%s-%d", owner, i), fmt.Sprintf("n%d", i), owner, int64(i)))
			noErr(t, err)
			reads[i] = s
		}
		errs := race(n, func(i int) error {
			renamed := *reads[i]
			renamed.Name = "weekly"
			_, err := handles[i%len(handles)].EditSchedule(bg, reads[i], &renamed)
			return err
		})
		checkOneWins(t, "rename for owner "+owner, errs)
		equal(t, "schedules named weekly of owner "+owner, countNamed(t, handles[0], "weekly", owner), 1)
	}
}

// race runs fn(0) … fn(n-1) at once and returns their errors.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

func checkOneWins(t *testing.T, what string, errs []error) {
	t.Helper()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, db.ErrExists):
			t.Errorf("%s: %v, want nil or db.ErrExists", what, err)
		}
	}
	if wins != 1 {
		t.Errorf("%s: %d of %d writes of one name succeeded, want 1", what, wins, len(errs))
	}
}

func countNamed(t *testing.T, d *db.DB, name, owner string) int {
	t.Helper()
	all, _, err := d.ListSchedules(bg, db.ScheduleFilter{Limit: 1000, Page: 1})
	noErr(t, err)
	n := 0
	for _, s := range all {
		if s.Name == name && s.UserID == owner {
			n++
		}
	}
	return n
}

// withoutScheduleNameIndexes drops the unique indexes on schedule names
// of a SQL driver's table; the memory driver has none.
func withoutScheduleNameIndexes(t *testing.T, d *db.DB) {
	t.Helper()
	st, ok := sqlstore.FromDB(d)
	if !ok {
		return
	}
	dl, table := st.SQLDialect(), st.Tables().Schedules
	for _, suffix := range []string{"_user_name", "_unowned_name"} {
		idx := dl.Quote("uq_" + table + suffix)
		var stmt string
		switch dl.Name {
		case "mysql":
			stmt = "DROP INDEX IF EXISTS " + idx + " ON " + dl.Table(table)
		case "postgres":
			if dl.Schema != "" {
				idx = dl.Quote(dl.Schema) + "." + idx
			}
			stmt = "DROP INDEX IF EXISTS " + idx
		default:
			stmt = "DROP INDEX IF EXISTS " + idx
		}
		if _, err := st.SQL().ExecContext(bg, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}
