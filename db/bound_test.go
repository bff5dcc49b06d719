package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
)

func TestWrap_QueryTimeoutDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   time.Duration
		want time.Duration
	}{
		{"zero is the default", 0, db.DefaultQueryTimeout},
		{"set", 250 * time.Millisecond, 250 * time.Millisecond},
		{"negative is no bound", -1, -1},
	}
	for _, tt := range tests {
		d := db.Wrap(memory.New(), db.Config{QueryTimeout: tt.in})
		if got := d.QueryTimeout(); got != tt.want {
			t.Errorf("%s: QueryTimeout() = %s, want %s", tt.name, got, tt.want)
		}
		if d.ID != "memory" {
			t.Errorf("%s: ID = %q, want the dialect", tt.name, d.ID)
		}
	}
	if db.DefaultQueryTimeout != 5*time.Second {
		t.Errorf("DefaultQueryTimeout = %s; the README and agentos/config document 5s", db.DefaultQueryTimeout)
	}
}

// A driver without Ping (the in-memory one) is always ready.
func TestPing_DriverWithoutPingIsReady(t *testing.T) {
	t.Parallel()
	if err := db.New("", memory.New()).Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// deadlineSeen is the in-memory driver reporting whether its GetSession got
// a deadline.
type deadlineSeen struct {
	*memory.Driver
	had bool
}

func (d *deadlineSeen) GetSession(ctx context.Context, id string) (*db.Session, error) {
	_, d.had = ctx.Deadline()
	return d.Driver.GetSession(ctx, id)
}

// An in-process driver never waits on I/O or a pool, so the front gives its
// calls no deadline (a timer per call that could not fire); a caller's own
// deadline still reaches it.
func TestBound_InProcessDriverGetsNoDeadlineOfItsOwn(t *testing.T) {
	t.Parallel()
	drv := &deadlineSeen{Driver: memory.New()}
	d := db.Wrap(drv, db.Config{QueryTimeout: time.Second})
	if !d.InProcess() {
		t.Fatal("the in-memory driver does not report InProcess")
	}
	if d.QueryTimeout() != time.Second {
		t.Fatalf("QueryTimeout() = %s", d.QueryTimeout())
	}
	ctx := context.Background()
	if _, err := d.GetSession(ctx, "none"); err == nil {
		t.Fatal("found a session in an empty store")
	}
	if drv.had {
		t.Fatal("the front set a deadline on an in-process driver's call")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	if _, err := d.GetSession(ctx, "none"); err == nil {
		t.Fatal("found a session in an empty store")
	}
	if !drv.had {
		t.Fatal("the caller's deadline did not reach the driver")
	}
}
