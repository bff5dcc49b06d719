package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
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
		return ctx, boundCall{d: d}
	}
	bctx, cancel := context.WithTimeoutCause(ctx, d.timeout, errQueryTimeout)
	return bctx, boundCall{d: d, ctx: bctx, cancel: cancel}
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
	ctx    context.Context // nil without a bound
	cancel context.CancelFunc
}

func (c boundCall) done(err error) error {
	if c.cancel == nil {
		return c.d.unavailable(err)
	}
	timedOut := err != nil && errors.Is(context.Cause(c.ctx), errQueryTimeout)
	c.cancel()
	if timedOut && !errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%w: no answer within %s (raise the query timeout if the database is only slow): %w", ErrUnavailable, c.d.timeout, err)
	}
	return c.d.unavailable(err)
}

// unavailable marks errors of an unreachable database or a connection lost
// mid-call with ErrUnavailable.
func (d *DB) unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
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
