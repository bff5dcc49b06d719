package db

import "context"

// A journal's step writes carry the fence of the attempt that runs them, as
// its run writes do (WithWriteFence): the journal's own fence row holds an
// attempt number only, which a run id enqueued again after its session was
// deleted (a repeated Idempotency-Key) shares with the deleted run's
// attempt (docs/adr/journal-job-fence.md).

type journalFenceKey struct{}

type journalFence struct {
	d     *DB
	fence TxFunc
}

// WithJournalWriteFence returns ctx whose journal step writes (Journal's,
// when the journal is kept in d) run fence first, in the step write's
// transaction: fence's error (run.ErrFenced when the job's attempt no
// longer holds the run) aborts the write. The durable queue passes its job
// fence: a step write then takes the job row before the journal's fence
// row, as the claim does. A journal in another database ignores it.
func WithJournalWriteFence(ctx context.Context, d *DB, fence TxFunc) context.Context {
	if fence == nil || d == nil {
		return ctx
	}
	return context.WithValue(ctx, journalFenceKey{}, journalFence{d: d, fence: fence})
}

type stepFenceKey struct{}

// StepWriteFence returns the fence a StepJournalDriver runs first in the
// transaction of a step write (BeginStep, FinishStep), nil when none: the
// WithJournalWriteFence of ctx, when ctx reached the driver through a
// Journal kept in the same database.
func StepWriteFence(ctx context.Context) TxFunc {
	f, _ := ctx.Value(stepFenceKey{}).(TxFunc)
	return f
}

// stepCtx is ctx for j's driver: the journal write fence of ctx when it is
// for j's database, and none otherwise (a fence of another database's
// statements must not run in j's transactions).
func (j *Journal) stepCtx(ctx context.Context) context.Context {
	f, ok := ctx.Value(journalFenceKey{}).(journalFence)
	switch {
	case ok && f.d.driver == j.d.driver:
		return context.WithValue(ctx, stepFenceKey{}, f.fence)
	case StepWriteFence(ctx) != nil:
		return context.WithValue(ctx, stepFenceKey{}, TxFunc(nil))
	}
	return ctx
}
