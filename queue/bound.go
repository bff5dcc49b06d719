package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

// errQueryTimeout is the cause of a bounded call's deadline.
var errQueryTimeout = errors.New("queue: query timeout")

// bounded gives a call of the read side (Get, List, Stats, Requeue) the
// database's query timeout (db.Config.QueryTimeout), as the db front gives
// its own calls: these run on the raw pool, and a statement waiting on a
// lock (a transaction holding the job row or the table) or on a server that
// does not answer held its HTTP request for as long as the client waited.
// done ends the deadline and maps the call's error: past the deadline it
// is db.ErrUnavailable (503), naming the timeout; otherwise as the front
// maps it (MarkUnavailableFor).
func (q *Queue) bounded(ctx context.Context) (bctx context.Context, done func(error) error) {
	timeout := q.d.QueryTimeout()
	if timeout <= 0 {
		return ctx, func(err error) error { return db.MarkUnavailableFor(ctx, err) }
	}
	bctx, cancel := context.WithTimeoutCause(ctx, timeout, errQueryTimeout)
	return bctx, func(err error) error {
		timedOut := err != nil && errors.Is(context.Cause(bctx), errQueryTimeout)
		cancel()
		if !timedOut || errors.Is(err, db.ErrUnavailable) {
			return db.MarkUnavailableFor(ctx, err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		return fmt.Errorf("%w: no answer within %s (raise the query timeout if the database is only slow): %w", db.ErrUnavailable, timeout, err)
	}
}
