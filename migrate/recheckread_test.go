package migrate_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// recheckRead is the text of the query that reads the sessions of earlier
// bad rows again.
const recheckRead = "IS NOT NULL AND session_id IN ("

// Up reads the sessions of earlier attempts' bad rows again in batches of
// BatchBytes, as the copy does, not 200 sessions at once whatever their
// size (sessions of a few MB each made one read of gigabytes). Here the
// recorded sessions' column is emptied, so the copy passes do not read
// them, then refilled (a 2.x process) while Up runs: the recheck alone
// reads them.
func TestUp_RecheckOfBadRowsReadsBatchBytes(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		const n, perBatch = 40, 4
		pad := strings.Repeat("x", 2048)
		valid := func(i int) string {
			id := fmt.Sprintf("bad-%02d", i)
			return "[" + run("run-"+id+"-1", id, `, "content": "`+pad+`"`) + ", " + run("run-"+id+"-2", id, `, "content": "`+pad+`"`) + "]"
		}
		var sessions []migratetest.Session
		for i := range n {
			sessions = append(sessions, legacyAgentSession(fmt.Sprintf("bad-%02d", i), `[{"run_id": "x", "content": "trunc`))
		}
		sessions = append(sessions, legacyAgentSession("z-ok", "["+run("run-z", "z-ok", "")+"]"))
		f.insert(t, sessions)
		if sum, err := f.manager(t).Up(ctx, ""); err != nil || sum.BadRowCount != n {
			t.Fatalf("Up = %+v, %v; want %d bad rows", sum, err, n)
		}
		f.exec(t, "UPDATE "+f.table("agno_sessions")+" SET runs = NULL WHERE session_id LIKE 'bad-%'")

		size := len(migratetest.Encode(string(f.dialect), []byte(valid(0))).(string))
		d, c := f.countingDB(t, recheckRead)
		var once sync.Once
		m := f.manager(t, func(cfg *migrate.Config) {
			cfg.DB, cfg.BatchSize, cfg.BatchBytes = d, 500, perBatch*size
			cfg.Progress = func(migrate.Progress) {
				once.Do(func() {
					for i := range n {
						f.setLegacyRuns(t, fmt.Sprintf("bad-%02d", i), valid(i))
					}
				})
			}
		})
		sum, err := m.Up(ctx, "")
		if err != nil || sum.BadRowCount != 0 || sum.RunsCopied != 2*n || sum.SessionsRechecked != n {
			t.Fatalf("Up = %+v, %v; want the %d rechecked sessions' runs copied", sum, err, n)
		}
		queries, read, _, maxRead := c.take()
		if read != n || maxRead > 2*perBatch+1 {
			t.Errorf("the recheck read %d sessions in %d reads, at most %d in one; want %d, at most %d per read (BatchBytes)",
				read, queries, maxRead, n, 2*perBatch+1)
		}
		if st := statusOf(t, m, migrate.KindSessions); st.BadRowsRecorded != 0 || st.UncopiedRuns != 0 {
			t.Errorf("status = %+v; want no bad row, nothing uncopied", st)
		}
	})
}
