package memory_test

import (
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/memory"
)

// TestConformance runs the suite every driver passes.
func TestConformance(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T) *db.DB {
		d := db.New("", memory.New())
		t.Cleanup(func() { _ = d.Close() })
		return d
	})
}

// TestTraces runs the trace-store suite: the in-memory driver keeps traces
// too (tracing.store in development, the isolation matrix's /traces rows).
func TestTraces(t *testing.T) {
	t.Parallel()
	dbtest.RunTraces(t, func(t *testing.T) *db.DB {
		d := db.New("", memory.New())
		t.Cleanup(func() { _ = d.Close() })
		return d
	})
}
