package dbtest

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
)

// countingMetrics counts the days a refresh aggregates (one SessionCountsIn
// each) and its jumps over empty days, on the driver it wraps.
type countingMetrics struct {
	db.Driver
	db.MetricsDriver
	days, jumps int
}

func (c *countingMetrics) SessionCountsIn(ctx context.Context, from, to int64) ([]db.SessionCount, error) {
	c.days++
	return c.MetricsDriver.SessionCountsIn(ctx, from, to)
}

func (c *countingMetrics) NextActivityAt(ctx context.Context, from, to int64) (int64, bool, error) {
	c.jumps++
	return c.MetricsDriver.NextActivityAt(ctx, from, to)
}

// A run (or session) another writer stamped near 1970 makes the first
// refresh start there: the days with neither runs nor sessions are passed
// in one query each gap, not aggregated one by one (~20,000 days, two
// queries each), and the days that hold activity are all counted.
func refreshPassesEmptyDays(t *testing.T, d *db.DB) {
	md, ok := d.Driver().(db.MetricsDriver)
	if !ok {
		t.Fatal("the driver stores no metrics")
	}
	c := &countingMetrics{Driver: d.Driver(), MetricsDriver: md}
	cd := db.New("counting", c)
	mustSession(t, bg, d, db.Session{SessionID: "old", CreatedAt: 1})
	old := NewRun("old", "old-r")
	old.CreatedAt = 1
	mustRun(t, bg, d, old)
	// A session alone on a day is counted on that day.
	mustSession(t, bg, d, db.Session{SessionID: "alone", CreatedAt: day0.AddDate(0, 0, -3).Unix()})
	metricsRun(t, d, "alice", "r1", 0, "agent", "COMPLETED", 1, 1)
	metricsRun(t, d, "alice", "r2", 2, "agent", "COMPLETED", 1, 1)
	written, err := cd.RefreshMetricsAt(bg, day0.AddDate(0, 0, 2).Add(12*time.Hour))
	noErr(t, err)
	var dates []string
	for _, m := range written {
		dates = append(dates, m.Date)
	}
	equal(t, "days written", dates, []string{"1970-01-01", "2026-03-07", "2026-03-10", "2026-03-12"})
	// Four active days and three gaps (after 1970-01-01, 03-07, 03-10):
	// each gap costs one aggregated empty day and one jump.
	if c.days > 7 || c.jumps > 3 {
		t.Fatalf("the refresh aggregated %d days and jumped %d times, want at most 7 and 3", c.days, c.jumps)
	}
}
