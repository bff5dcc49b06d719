package queue

import "testing"

// forgetClaimFailures runs after every claim that worked, nearly always
// with no failed claim counted: it took q.mu (the lock of every claim,
// hold and release) each time all the same. With nothing counted it takes
// no lock now: called while q.mu is held, it returns (it deadlocked
// before). A count that is recorded is still forgotten.
func TestForgetClaimFailures_NoLockWhenNothingIsCounted(t *testing.T) {
	q := &Queue{claimFailKeep: claimFailKeep}
	q.mu.Lock()
	q.forgetClaimFailures(7) // would wait for q.mu forever
	q.mu.Unlock()

	if n := q.countClaimFailure(7, 0); n != 1 {
		t.Fatalf("first failure counted as %d", n)
	}
	q.countClaimFailure(8, 0)
	q.forgetClaimFailures(7)
	if n := q.countClaimFailure(7, 0); n != 1 {
		t.Errorf("after forgetting, a failure counted as %d, want 1", n)
	}
	if n := q.countClaimFailure(8, 0); n != 2 {
		t.Errorf("another job's count is %d, want 2 (kept)", n)
	}
	q.forgetClaimFailures(7)
	q.forgetClaimFailures(8)
	if n := q.claimFailing.Load(); n != 0 {
		t.Errorf("%d jobs counted after all were forgotten, want 0", n)
	}
	q.mu.Lock()
	q.forgetClaimFailures(8) // nothing counted again: no lock
	q.mu.Unlock()
}
