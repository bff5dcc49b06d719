package schedule

import (
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
)

// TestRetryKeys: the attempts of a cron firing are keyed (schedule, due
// time, attempt) and their rows follow one another; a manual trigger's
// retries, even of the same second, get other rows and keys.
func TestRetryKeys(t *testing.T) {
	due := time.Unix(1_800_000_000, 0)
	if got, want := RetryKey("s1", due, 2), "agentry-schedule:s1@1800000000#2"; got != want {
		t.Fatalf("RetryKey = %q, want %q", got, want)
	}
	first := &db.ScheduleRun{ID: runIDOf(Key("s1", due)), ScheduleID: "s1", Attempt: 1, TriggeredAt: due.Unix()}
	second := &db.ScheduleRun{ID: nextRunID(first), ScheduleID: "s1", Attempt: 2, TriggeredAt: due.Unix()}
	if second.ID != runIDOf(RetryKey("s1", due, 2)) || retryKey(second) != RetryKey("s1", due, 2) {
		t.Fatalf("attempt 2 of a cron firing: row %s key %q", second.ID, retryKey(second))
	}
	third := &db.ScheduleRun{ID: nextRunID(second), ScheduleID: "s1", Attempt: 3, TriggeredAt: due.Unix()}
	if third.ID != runIDOf(RetryKey("s1", due, 3)) || retryKey(third) != RetryKey("s1", due, 3) {
		t.Fatalf("attempt 3 of a cron firing: row %s key %q", third.ID, retryKey(third))
	}
	trig := &db.ScheduleRun{ID: runIDOf("agentry-schedule:s1:trigger:x"), ScheduleID: "s1", Attempt: 1, TriggeredAt: due.Unix()}
	tr2 := &db.ScheduleRun{ID: nextRunID(trig), ScheduleID: "s1", Attempt: 2, TriggeredAt: due.Unix()}
	if tr2.ID == second.ID || retryKey(tr2) == retryKey(second) {
		t.Fatalf("a trigger's retry shares the cron firing's row or key (%s, %q)", tr2.ID, retryKey(tr2))
	}
	if tr3 := nextRunID(tr2); tr3 == tr2.ID || tr3 == third.ID {
		t.Fatalf("a trigger's third attempt reuses a row id")
	}
}
