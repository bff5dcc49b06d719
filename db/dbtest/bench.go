package dbtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// BenchRuns returns n completed agent runs run-000000… of session sessionID,
// each with a realistic ~2 KB run_data document, for write benchmarks.
func BenchRuns(sessionID string, n int) []*db.Run {
	rows := make([]*db.Run, n)
	for i := range rows {
		id := fmt.Sprintf("run-%06d", i)
		rows[i] = &db.Run{RunID: id, SessionID: sessionID, RunType: run.TypeAgent, AgentID: "bench", Status: run.StatusCompleted, RunData: runData2KB(id)}
	}
	return rows
}

func runData2KB(id string) json.RawMessage {
	msgs := []map[string]string{}
	for i := range 6 {
		msgs = append(msgs, map[string]string{"role": []string{"user", "assistant"}[i%2],
			"content": fmt.Sprintf("%s message %d %s", id, i, strings.Repeat("lorem ipsum dolor ", 16))})
	}
	b, _ := json.Marshal(map[string]any{"run_id": id, "agent_id": "bench", "status": "COMPLETED", "messages": msgs,
		"metrics": map[string]int{"input_tokens": 120, "output_tokens": 80, "total_tokens": 200}})
	return b
}

// BenchGetRunsPages measures pages of 20 from session "big", whose runs are
// run-000000… at run_index 0…total-1: page 1, page 2,000 by page number
// (exact, OFFSET over the index) and page 2,000 by keyset cursor. p50-ns is
// the median latency.
func BenchGetRunsPages(b *testing.B, d *db.DB) {
	const limit, deep = 20, 2000
	after := int64((deep-1)*limit - 1)
	cases := []struct {
		name string
		f    db.RunFilter
		// first is the index of the page's first run.
		first int
	}{
		{"page=1", db.RunFilter{SessionID: "big", Limit: limit, Page: 1}, 0},
		{"page=2000/offset", db.RunFilter{SessionID: "big", Limit: limit, Page: deep}, (deep - 1) * limit},
		{"page=2000/keyset", db.RunFilter{SessionID: "big", Limit: limit, Page: 1, AfterRunIndex: &after}, (deep - 1) * limit},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				runs, _, err := d.GetRuns(bg, c.f)
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				if want := fmt.Sprintf("run-%06d", c.first); len(runs) != limit || runs[0].RunID != want {
					b.Fatalf("%s: got %d runs starting %v, want %d from %s", c.name, len(runs), runs, limit, want)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
		})
	}
}
