package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/queue"
)

// A Postgres pool of one connection is refused at Open with a clear error;
// before the check, the migrations waited forever for a second connection.
func TestOpen_RefusesAOneConnectionPostgresPool(t *testing.T) {
	d, _ := proxiedPostgresPool(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := queue.Open(ctx, d, queue.Config{}, complete(d))
	if err == nil {
		t.Fatal("Open accepted a pool of one connection")
	}
	if !errors.Is(err, queue.ErrConfig) || !strings.Contains(err.Error(), "MaxOpenConns") {
		t.Fatalf("Open: %v, want ErrConfig naming MaxOpenConns", err)
	}
}
