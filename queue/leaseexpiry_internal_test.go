package queue

import (
	"testing"
	"time"
)

// A claim refused for a live lease waits until the claim would take the
// row: leaseLive is positive for as long as claimSQL's condition
// (locked_at < now - LockGrace, whole seconds) refuses it. It ended a
// second sooner: a redispatched job that came back in that second was
// refused again, found no live lease, and was cancelled while its run's
// row was still running.
func TestLeaseLive_LastsAsLongAsTheClaimRefuses(t *testing.T) {
	for _, grace := range []time.Duration{time.Second, 1500 * time.Millisecond, 5 * time.Second, time.Minute} {
		q := &Queue{cfg: Config{LockGrace: grace}}
		g := int64(grace / time.Second)
		// The claim's condition, as claimSQL states it.
		takes := func(lockedAt, now int64) bool { return lockedAt < now-q.graceSeconds() }
		const lockedAt = 1_000_000
		exp := q.leaseExpiry(lockedAt).Unix()
		if takes(lockedAt, exp-1) || !takes(lockedAt, exp) {
			t.Fatalf("grace %v: lease expiry at +%ds, but the claim takes the row from +%ds on", grace, exp-lockedAt, g+1)
		}
		// In the last second the claim still refuses the row, leaseLive
		// must say wait (retried if the clock's second changed meanwhile).
		for {
			s := time.Now().Unix()
			j := &claimedJob{Job: Job{Status: StatusRunning, Attempt: 1, LockedBy: "other", LockedAt: s - g}}
			wait := q.leaseLive(j, 2)
			if time.Now().Unix() != s {
				continue
			}
			if takes(j.LockedAt, s) {
				t.Fatalf("grace %v: the claim would take a row locked at now-%ds", grace, g)
			}
			if wait <= 0 {
				t.Fatalf("grace %v: leaseLive = %v for a row the claim refuses (locked at now-%ds)", grace, wait, g)
			}
			break
		}
	}
}
