package sqlite_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/run"
)

// BenchmarkSessionHistoryRefs is a turn's history read alone on a SQLite
// file: a session of 25 runs (~1 KB of run_data each), every run held by
// the caller's cache, read with the whole history (limit 26) and with the
// last 3 runs, as the 25th turn of the conversation benchmarks reads it.
func BenchmarkSessionHistoryRefs(b *testing.B) {
	d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), "history.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent, AgentID: "a1"}); err != nil {
		b.Fatal(err)
	}
	var cached []db.CachedRun // newest first, as the agent's cache lists them
	for i := range 25 {
		r, err := db.RunFromOutput(&run.Output{RunID: "run-" + strconv.Itoa(i), SessionID: "s", AgentID: "a1", Status: run.StatusCompleted,
			Content: fmt.Sprintf("%01000d", i), CreatedAt: time.Now().Unix()})
		if err != nil {
			b.Fatal(err)
		}
		if r, err = d.UpsertRun(ctx, r); err != nil {
			b.Fatal(err)
		}
		cached = append([]db.CachedRun{{RunID: r.RunID, UpdatedAt: r.UpdatedAt, Size: len(r.RunData)}}, cached...)
	}
	for _, tc := range []struct {
		name  string
		limit int
	}{{"Whole", 26}, {"Last3", 3}} {
		b.Run(tc.name, func(b *testing.B) {
			q := db.HistoryQuery{SessionID: "s", AgentID: "a1", Limit: tc.limit, Cached: cached[:min(tc.limit, len(cached))]}
			b.ReportAllocs()
			for b.Loop() {
				_, refs, err := d.SessionHistoryRefs(ctx, q)
				if err != nil || len(refs) != min(tc.limit, 25) {
					b.Fatalf("%d refs, %v", len(refs), err)
				}
				for _, r := range refs {
					if r.RunData != nil {
						b.Fatalf("run %s came back with its run_data: it is cached", r.RunID)
					}
				}
			}
		})
	}
}
