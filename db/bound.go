package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultQueryTimeout is Config.QueryTimeout's default.
const DefaultQueryTimeout = 5 * time.Second

// errQueryTimeout is the cause of the front's own deadline.
var errQueryTimeout = errors.New("db: query timeout")

// bound gives one driver call the front's deadline. The returned call's
// done ends the deadline and maps the call's error: past the deadline, or
// lost on a broken connection, it is ErrUnavailable. Without a bound
// (negative QueryTimeout) the call still gets the mapping.
func (d *DB) bound(ctx context.Context) (context.Context, boundCall) {
	if d.timeout <= 0 || d.inProcess {
		return ctx, boundCall{d: d, caller: ctx}
	}
	b := &boundCtx{parent: ctx, deadline: time.Now().Add(d.timeout), q: d.deadlines}
	return b, boundCall{d: d, ctx: b, caller: ctx}
}

// InProcess is the optional ability of a driver whose calls never wait on
// I/O or a connection pool (the in-memory store): a call only takes a lock
// and copies values. The front gives such calls no deadline of its own
// (it would cost a timer per call and could not fire before the call
// returns); the caller's context still reaches the driver.
type InProcess interface {
	InProcess() bool
}

// InProcess reports whether the driver runs in this process without I/O
// (see the InProcess interface).
func (d *DB) InProcess() bool { return d.inProcess }

// boundCall is one bounded driver call (a value: no allocation per call).
type boundCall struct {
	d      *DB
	ctx    *boundCtx // nil without a bound
	caller context.Context
}

func (c boundCall) done(err error) error {
	if c.ctx == nil {
		return MarkUnavailableFor(c.caller, err)
	}
	timedOut := err != nil && c.ctx.timedOut()
	c.ctx.release()
	if timedOut && !errors.Is(err, ErrUnavailable) {
		if !errors.Is(err, context.DeadlineExceeded) {
			// The driver's error came through a context it derived from the
			// call's (a connect timeout, database/sql's rows): that one ends
			// with Canceled, where one derived from context.WithDeadline
			// ended with DeadlineExceeded (docs/adr/query-deadline-queue.md,
			// "Amendment"). The error names the deadline either way.
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		return fmt.Errorf("%w: no answer within %s (raise the query timeout if the database is only slow): %w", ErrUnavailable, c.d.timeout, err)
	}
	return MarkUnavailableFor(c.caller, err)
}

// boundCtx is the context of a bounded driver call: its parent with the
// query timeout's deadline. Nothing is built for the deadline until a driver
// asks for Done; then the timed context is a cancel context whose deadline
// waits in the DB's queue (see deadlines), not a timer of its own.
// context.WithTimeout would link a cancel context into the parent and insert
// and remove a runtime timer on every call, although the SQLite store runs
// its statements without the cancellation (sqlstore's Store.gated and history
// read) and bounds its lock waits with busy_timeout. Err and Deadline answer
// from the clock until Done is asked. Drivers that watch Done (pgx, the MySQL
// driver, database/sql's connection wait) get the same deadline, error and
// cause as with context.WithDeadlineCause. ADRs docs/adr/lazy-query-deadline.md
// and docs/adr/query-deadline-queue.md.
type boundCtx struct {
	parent   context.Context
	deadline time.Time
	// timed is set, after inner, once a driver asked for Done: readers
	// (Value runs on every context lookup of a statement) load it instead
	// of taking mu, and its store publishes inner to them.
	timed    atomic.Bool
	released atomic.Bool
	mu       sync.Mutex      // creates inner, releases
	inner    context.Context // the timed context, written once under mu
	cancel   context.CancelCauseFunc
	// q fires the deadline; prev, next and queued are q's links, guarded
	// by q.mu.
	q          *deadlines
	prev, next *boundCtx
	queued     bool
}

func (b *boundCtx) Deadline() (time.Time, bool) {
	if d, ok := b.parent.Deadline(); ok && d.Before(b.deadline) {
		return d, true
	}
	return b.deadline, true
}

func (b *boundCtx) Done() <-chan struct{} {
	if b.timed.Load() {
		return b.inner.Done()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inner == nil {
		b.inner, b.cancel = context.WithCancelCause(b.parent)
		if b.released.Load() { // the call is over: as a cancelled WithTimeout
			b.cancel(nil)
		} else {
			b.q.add(b)
		}
		b.timed.Store(true)
	}
	return b.inner.Done()
}

func (b *boundCtx) Err() error {
	if b.timed.Load() {
		err := b.inner.Err()
		if err != nil && context.Cause(b.inner) == errQueryTimeout {
			return context.DeadlineExceeded // as context.WithDeadline
		}
		return err
	}
	if err := b.parent.Err(); err != nil {
		return err
	}
	if b.released.Load() {
		return context.Canceled
	}
	if !time.Now().Before(b.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (b *boundCtx) Value(key any) any {
	if b.timed.Load() {
		return b.inner.Value(key) // context.Cause finds the timed context
	}
	return b.parent.Value(key)
}

// timedOut reports whether the call ended by the query timeout rather than
// by its parent.
func (b *boundCtx) timedOut() bool {
	if b.timed.Load() {
		return errors.Is(context.Cause(b.inner), errQueryTimeout)
	}
	if b.parent.Err() != nil {
		if d, ok := b.parent.Deadline(); !ok || d.Before(b.deadline) {
			return false
		}
	}
	return !time.Now().Before(b.deadline)
}

// release ends the call's context (and takes its deadline out of the
// queue, if it was queued).
func (b *boundCtx) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.released.Store(true)
	if b.cancel != nil {
		b.q.remove(b)
		b.cancel(nil)
	}
}

// MarkUnavailable marks err with ErrUnavailable when it tells of an
// unreachable database or a connection lost mid-call (a network error, a
// bad connection, an unexpected EOF, a server's SQLSTATE saying it cannot
// serve now: serverUnavailable), as the front marks its drivers' errors;
// for code that reaches a store's pools directly (runlog, the queue). A
// caller's own deadline is a net.Error too (a timeout): code that has the
// caller's context uses MarkUnavailableFor.
func MarkUnavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || serverUnavailable(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// serverUnavailable reports whether err is a server's SQLSTATE (pgx's
// PgError has SQLState) saying it cannot serve now: a connection
// exception (class 08), a connection it ended (57P01 administrator
// command or shutdown, 57P02 crash shutdown), a server starting up or
// shutting down (57P03), or one out of connections (53300).
func serverUnavailable(err error) bool {
	var st interface{ SQLState() string }
	if !errors.As(err, &st) {
		return false
	}
	switch code := st.SQLState(); code {
	case "57P01", "57P02", "57P03", "53300":
		return true
	default:
		return len(code) == 5 && code[:2] == "08"
	}
}

// Pinger is an optional Driver ability: checking that the database answers.
type Pinger interface {
	// Ping reaches the database (every pool the driver uses) and returns
	// its error.
	Ping(ctx context.Context) error
}

// Ping checks, within the query timeout, that the database answers (the
// readiness check). A driver that cannot ping is always reachable.
func (d *DB) Ping(ctx context.Context) error {
	p, ok := d.driver.(Pinger)
	if !ok {
		return nil
	}
	ctx, call := d.bound(ctx)
	return call.done(p.Ping(ctx))
}

// MarkUnavailableFor is MarkUnavailable for a call made with ctx, the
// caller's context: when ctx has ended and err is that ending
// (context.Canceled or DeadlineExceeded, possibly wrapped in a driver's or
// the network's error), the error is the caller's, not the database's, and
// stays unmarked. While ctx is live, a timeout is the database's (a
// driver's own connect timeout) and is marked as MarkUnavailable marks it.
func MarkUnavailableFor(ctx context.Context, err error) error {
	if err != nil && ctx != nil && ctx.Err() != nil &&
		(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	return MarkUnavailable(err)
}

// Bound gives a call made outside the front, on the driver's own pool (the
// queue's reads of its tables), the front's query timeout and error
// mapping: done ends the deadline and maps the call's error as the front
// maps its own (past the deadline, ErrUnavailable naming the timeout).
func (d *DB) Bound(ctx context.Context) (bctx context.Context, done func(error) error) {
	bctx, call := d.bound(ctx)
	return bctx, call.done
}
