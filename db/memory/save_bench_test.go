package memory_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// BenchmarkSaveRunOwned is a conversation's run saves alone: 25 runs a
// session, one session write per conversation, in a store that keeps every
// run of the benchmark (as the peers' conversation rows do). One op is one
// run save. The rows are built outside the timer, as db.RunFromOutput builds
// them.
func BenchmarkSaveRunOwned(b *testing.B) {
	d := newDB(b)
	ctx := context.Background()
	rows := make([]*db.Run, b.N)
	sessions := make([]*db.Session, b.N/25+1)
	for i := range rows {
		sid := "s" + strconv.Itoa(i/25)
		if i%25 == 0 {
			sessions[i/25] = session(sid, "")
		}
		// Encoded as the agent encodes it (checked JSON: kept without a scan).
		r, err := db.RunFromOutput(&run.Output{RunID: "r" + strconv.Itoa(i), SessionID: sid,
			AgentID: "agent-1", Status: run.StatusCompleted, Content: "answer", UpdatedAt: int64(i)})
		if err != nil {
			b.Fatal(err)
		}
		rows[i] = r
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		var s *db.Session
		if i%25 == 0 {
			s = sessions[i/25]
		}
		if _, _, err := d.SaveRunOwned(ctx, s, rows[i]); err != nil {
			b.Fatal(err)
		}
	}
}
