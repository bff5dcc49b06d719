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
