package runlog_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/runlog"
)

// The log's calls end as the store's own calls do (db.DB's bound): a call
// the caller's own deadline ended is classified as the store's, and is not
// said to have waited out the query timeout (with one or without).
func TestLog_CallersDeadlineIsNotUnavailable(t *testing.T) {
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := open(t)
			for _, bound := range []time.Duration{time.Hour, -1} {
				d := db.Wrap(base.Driver(), db.Config{QueryTimeout: bound})
				l, err := runlog.Open(context.Background(), d)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
				defer cancel()
				_, derr := d.GetRun(ctx, "run-any")
				_, lerr := l.Read(ctx, "run-any", -1, 10)
				if !errors.Is(lerr, context.DeadlineExceeded) || errors.Is(lerr, db.ErrUnavailable) != errors.Is(derr, db.ErrUnavailable) ||
					strings.Contains(lerr.Error(), "no answer within") {
					t.Errorf("query timeout %s, caller's deadline passed: the log's read gave %v, the store's %v (the query timeout did not end it)", bound, lerr, derr)
				}
			}
		})
	}
}

// A connection lost under a call is db.ErrUnavailable (retry later, 503),
// as the store's own calls report it, not an unclassified error.
func TestLog_LostConnectionIsUnavailable(t *testing.T) {
	t.Parallel()
	d, p := proxiedPostgres(t, time.Hour)
	ctx := context.Background()
	l, err := runlog.Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	p.Cut()
	defer p.Restore()
	_, derr := d.GetRun(ctx, "run-any")
	_, lerr := l.Read(ctx, "run-any", -1, 10)
	_, _, last := l.Last(ctx, "run-any")
	if !errors.Is(derr, db.ErrUnavailable) {
		t.Fatalf("the store's read on a cut connection: %v (the test expects ErrUnavailable)", derr)
	}
	for name, err := range map[string]error{"Read": lerr, "Last": last} {
		if !errors.Is(err, db.ErrUnavailable) {
			t.Errorf("%s on a cut connection: %v, want db.ErrUnavailable as the store's read", name, err)
		}
	}
}
