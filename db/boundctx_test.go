package db_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
)

// waitingDriver is the in-memory driver posing as one that waits on I/O (so
// the front bounds its calls); its GetSession runs wait with the call's
// context and keeps the context for inspection after the call.
type waitingDriver struct {
	*memory.Driver
	wait func(ctx context.Context) error
	ctx  context.Context
}

func (d *waitingDriver) InProcess() bool { return false }

func (d *waitingDriver) GetSession(ctx context.Context, id string) (*db.Session, error) {
	d.ctx = ctx
	if err := d.wait(ctx); err != nil {
		return nil, err
	}
	return d.Driver.GetSession(ctx, id)
}

// driverWaits are the ways a driver waits on its context: watching Done
// (pgx, the MySQL driver, database/sql's pool wait), asking Err between
// steps (a driver that bounds its own waits), or watching a context it
// derived (pgx's and the MySQL driver's connect timeout, database/sql's
// rows).
var driverWaits = map[string]func(context.Context) error{
	"watches Done": func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	},
	"derives a context": func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, time.Hour)
		defer cancel()
		<-ctx.Done()
		return ctx.Err()
	},
	"asks Err": func(ctx context.Context) error {
		for ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		return ctx.Err()
	},
}

// The query timeout ends a call the same way whether its driver watches Done
// (pgx, the MySQL driver, database/sql's pool wait) or only asks Err (a
// driver that bounds its own waits and checks the context between steps):
// ErrUnavailable, wrapping context.DeadlineExceeded.
func TestBound_QueryTimeoutEndsTheCallWithErrUnavailable(t *testing.T) {
	t.Parallel()
	for name, wait := range driverWaits {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			drv := &waitingDriver{Driver: memory.New(), wait: wait}
			d := db.Wrap(drv, db.Config{QueryTimeout: 20 * time.Millisecond})
			_, err := d.GetSession(context.Background(), "s")
			if !errors.Is(err, db.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want ErrUnavailable wrapping DeadlineExceeded", err)
			}
			if !strings.Contains(err.Error(), "no answer within") {
				t.Fatalf("err = %v, want the query timeout named", err)
			}
		})
	}
}

// A caller's own cancellation is not the database being unavailable.
func TestBound_CallerCancelIsNotUnavailable(t *testing.T) {
	t.Parallel()
	for name, wait := range driverWaits {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			drv := &waitingDriver{Driver: memory.New(), wait: wait}
			d := db.Wrap(drv, db.Config{QueryTimeout: time.Hour})
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(10*time.Millisecond, cancel)
			_, err := d.GetSession(ctx, "s")
			if !errors.Is(err, context.Canceled) || errors.Is(err, db.ErrUnavailable) {
				t.Fatalf("err = %v, want context.Canceled without ErrUnavailable", err)
			}
		})
	}
}

// A caller's own deadline is not the database being unavailable either
// (context.DeadlineExceeded is a net.Error, a timeout): with or without the
// front's bound, the call's error is the caller's deadline, unmarked.
func TestBound_CallerDeadlineIsNotUnavailable(t *testing.T) {
	t.Parallel()
	for _, timeout := range []time.Duration{time.Hour, -1} {
		for name, wait := range driverWaits {
			t.Run(fmt.Sprintf("%s/timeout=%s", name, timeout), func(t *testing.T) {
				t.Parallel()
				drv := &waitingDriver{Driver: memory.New(), wait: wait}
				d := db.Wrap(drv, db.Config{QueryTimeout: timeout})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				defer cancel()
				_, err := d.GetSession(ctx, "s")
				if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, db.ErrUnavailable) {
					t.Fatalf("err = %v, want context.DeadlineExceeded without ErrUnavailable", err)
				}
			})
		}
	}
}

// A lost connection is ErrUnavailable while the caller's context is live,
// even when the driver's error is a timeout (a connect timeout of the
// driver's own): only the caller's ended context is left unmarked.
func TestMarkUnavailable_TimeoutOfALiveCallerIsUnavailable(t *testing.T) {
	t.Parallel()
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}
	if err := db.MarkUnavailable(dial); !errors.Is(err, db.ErrUnavailable) {
		t.Fatalf("MarkUnavailable(%v) = %v, want ErrUnavailable", dial, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := db.MarkUnavailableFor(ctx, dial); !errors.Is(err, db.ErrUnavailable) {
		t.Fatalf("live caller: %v, want ErrUnavailable", err)
	}
	cancel()
	if err := db.MarkUnavailableFor(ctx, fmt.Errorf("read: %w", context.Canceled)); errors.Is(err, db.ErrUnavailable) {
		t.Fatalf("ended caller: %v, want it unmarked", err)
	}
}

// A bounded call's context carries the query timeout's deadline (or the
// caller's earlier one) and ends, Done included, when the call returns.
func TestBound_CallContextHasTheDeadlineAndEndsWithTheCall(t *testing.T) {
	t.Parallel()
	drv := &waitingDriver{Driver: memory.New(), wait: func(ctx context.Context) error { return ctx.Err() }}
	d := db.Wrap(drv, db.Config{QueryTimeout: time.Hour})
	before := time.Now()
	if _, err := d.GetSession(context.Background(), "none"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	dl, ok := drv.ctx.Deadline()
	if !ok || dl.Before(before.Add(time.Hour)) || dl.After(time.Now().Add(time.Hour)) {
		t.Fatalf("deadline = %v, %v; want the query timeout's", dl, ok)
	}
	if !errors.Is(drv.ctx.Err(), context.Canceled) {
		t.Fatalf("after the call Err() = %v, want context.Canceled", drv.ctx.Err())
	}
	select {
	case <-drv.ctx.Done():
	default:
		t.Fatal("after the call Done() is open")
	}

	earlier, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want, _ := earlier.Deadline()
	if _, err := d.GetSession(earlier, "none"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if dl, _ := drv.ctx.Deadline(); !dl.Equal(want) {
		t.Fatalf("deadline = %v, want the caller's earlier %v", dl, want)
	}
}

// A call whose context was asked for Done while it ran ends its timer with
// the call, and its Value still reaches the caller's values.
func TestBound_DoneAskedDuringTheCall(t *testing.T) {
	t.Parallel()
	type key struct{}
	drv := &waitingDriver{Driver: memory.New(), wait: func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		default:
			return nil
		}
	}}
	d := db.Wrap(drv, db.Config{QueryTimeout: time.Hour})
	ctx := context.WithValue(context.Background(), key{}, "v")
	if _, err := d.GetSession(ctx, "none"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if drv.ctx.Value(key{}) != "v" {
		t.Fatal("the call's context lost the caller's value")
	}
	<-drv.ctx.Done() // closed by the end of the call, not the hour
	if !errors.Is(drv.ctx.Err(), context.Canceled) {
		t.Fatalf("Err() = %v, want context.Canceled", drv.ctx.Err())
	}
}

// A call's context is read from several goroutines at once (pgx watches Done
// on its own goroutine while the call asks Value and Err): the first Done
// publishes the timed context to readers that take no lock. Run with -race.
func TestBound_CallContextIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	type key struct{}
	drv := &waitingDriver{Driver: memory.New(), wait: func(ctx context.Context) error {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for range 200 {
					if ctx.Value(key{}) != "v" {
						t.Error("the call's context lost the caller's value")
						return
					}
					if err := ctx.Err(); err != nil {
						t.Errorf("Err() = %v during the call", err)
						return
					}
					if i%2 == 0 {
						select {
						case <-ctx.Done():
							t.Error("Done closed during the call")
							return
						default:
						}
					}
				}
			})
		}
		wg.Wait()
		return nil
	}}
	d := db.Wrap(drv, db.Config{QueryTimeout: time.Hour})
	ctx := context.WithValue(context.Background(), key{}, "v")
	if _, err := d.GetSession(ctx, "none"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	<-drv.ctx.Done()
	if !errors.Is(drv.ctx.Err(), context.Canceled) {
		t.Fatalf("Err() = %v after the call, want context.Canceled", drv.ctx.Err())
	}
}
