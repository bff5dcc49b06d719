package queue

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
)

// Bounded by the query timeout, the lease loop's statements stuck behind a
// lock end and the loop goes on ticking on time; no node could renew
// meanwhile, so every lease looks expired the moment the database answers
// again. A sweep then would take over every live run. The loop sweeps
// only after a renewal period of statements answered, as after a stall of
// its own.
func TestSweepGate_WaitsARenewalPeriodOnceTheDatabaseAnswersAgain(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_000_000, 0)
	every := 2 * time.Second
	g := sweepGate{every: every, last: t0, steady: t0}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	g.tick(at(every))
	if !g.maySweep(at(every)) {
		t.Fatal("a loop ticking on time for a renewal period may not sweep")
	}
	timeout := fmt.Errorf("%w: no answer within 1s: %w", db.ErrUnavailable, errSweepTest)
	// Turns of a poll's length whose statements time out (each turn
	// shorter than the renewal period: the loop itself is on time).
	now := at(every)
	for range 10 {
		now = now.Add(500 * time.Millisecond)
		g.tick(now)
		g.after(now.Add(100*time.Millisecond), timeout)
	}
	// The lock is released: the statements answer again.
	for d := time.Duration(0); d < every; d += 500 * time.Millisecond {
		now = now.Add(500 * time.Millisecond)
		g.tick(now)
		if g.maySweep(now) {
			t.Fatalf("swept %s after the database answered again, want a renewal period (%s) first", d+500*time.Millisecond, every)
		}
		g.after(now, nil)
	}
	now = now.Add(500 * time.Millisecond)
	g.tick(now)
	if !g.maySweep(now) {
		t.Errorf("no sweep after a renewal period of answered statements")
	}
	// Other errors (a statement refused) say nothing of the others'
	// renewals.
	g.after(now, errSweepTest)
	if !g.maySweep(now) {
		t.Errorf("a refused statement held the sweep back")
	}
}

var errSweepTest = fmt.Errorf("test: statement refused")
