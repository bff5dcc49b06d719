package runlog

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// Retention keys on a run's last event: a run paused two hours ago whose
// log went on a moment ago (continued, then completed) keeps its log with
// a one-hour retention; a log whose last, final event is older goes.
func TestDeleteBefore_KeysOnTheLastEvent(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			l, err := Open(ctx, testdbs.All[name](t))
			if err != nil {
				t.Fatal(err)
			}
			ev := func(name string, final bool) Pending {
				return Pending{Event: name, Data: []byte(`{"event":"` + name + `"}`), Final: final}
			}
			for _, id := range []string{"continued", "paused"} {
				if err := l.Append(ctx, id, 1, []Pending{ev("RunStarted", false), ev("RunPaused", true)}, nil); err != nil {
					t.Fatal(err)
				}
			}
			// The pauses happened two hours ago.
			if _, err := l.w.ExecContext(ctx, `UPDATE `+l.table+` SET created_at = created_at - 7200`); err != nil {
				t.Fatal(err)
			}
			if err := l.Append(ctx, "continued", 1, []Pending{ev("RunContinued", false), ev("RunCompleted", true)}, nil); err != nil {
				t.Fatal(err)
			}
			now := time.Now().Unix()
			n, err := l.DeleteBefore(ctx, now-3600, now-7*3600)
			if err != nil || n != 2 {
				t.Fatalf("deleted %d (%v), want the paused run's 2 events", n, err)
			}
			if c, _ := l.Count(ctx, "continued"); c != 4 {
				t.Fatalf("the continued run has %d events left, want 4", c)
			}
			if c, _ := l.Count(ctx, "paused"); c != 0 {
				t.Fatalf("the paused run has %d events left", c)
			}
		})
	}
}
