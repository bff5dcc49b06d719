package schedule

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParse_NextInTimezone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		expr, tz string
		after    time.Time
		want     time.Time
	}{
		{"* * * * *", "", time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC), time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)},
		{"0 9 * * 1-5", "America/New_York", time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC), time.Date(2026, 1, 5, 14, 0, 0, 0, time.UTC)},
		// 02:30 does not exist in Paris on 29 March 2026 (DST): the next one is the 30th.
		{"30 2 * * *", "Europe/Paris", time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC)},
		{"@daily", "Asia/Tokyo", time.Date(2026, 6, 1, 16, 0, 0, 0, time.UTC), time.Date(2026, 6, 2, 15, 0, 0, 0, time.UTC)},
		// 01:30 comes twice in New York on 1 November 2026 (DST ends at 02:00
		// EDT): a daily job is due at the first only, then on the 2nd.
		{"30 1 * * *", "America/New_York", time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)},
		{"30 1 * * *", "America/New_York", time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC)},
		{"*/20 1 * * *", "America/New_York", time.Date(2026, 11, 1, 5, 40, 0, 0, time.UTC), time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)},
		// Lord Howe turns back 30 minutes (02:00 → 01:30) on 5 April 2026.
		{"45 1 * * *", "Australia/Lord_Howe", time.Date(2026, 4, 4, 14, 0, 0, 0, time.UTC), time.Date(2026, 4, 4, 14, 45, 0, 0, time.UTC)},
		{"45 1 * * *", "Australia/Lord_Howe", time.Date(2026, 4, 4, 14, 45, 0, 0, time.UTC), time.Date(2026, 4, 5, 15, 15, 0, 0, time.UTC)},
		// An hourly job runs in both passes of the repeated hour: it really
		// passes twice.
		{"0 * * * *", "America/New_York", time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)},
		{"@hourly", "Europe/Paris", time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC)},
	} {
		s, err := Parse(c.expr, c.tz)
		if err != nil {
			t.Fatalf("%s in %s: %v", c.expr, c.tz, err)
		}
		if got := s.Next(c.after); !got.Equal(c.want) {
			t.Errorf("%s in %s after %s = %s, want %s", c.expr, c.tz, c.after, got.UTC(), c.want)
		}
	}
}

func TestParse_RefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		expr, tz string
		want     error
	}{
		{"", "UTC", ErrInvalidCron}, {"61 * * * *", "UTC", ErrInvalidCron}, {"* * * *", "UTC", ErrInvalidCron},
		{"0 0 * * * *", "UTC", ErrInvalidCron}, {"@every 5m", "UTC", ErrInvalidCron}, {"CRON_TZ=UTC * * * * *", "UTC", ErrInvalidCron},
		{"*/0 * * * *", "UTC", ErrInvalidCron}, {strings.Repeat("1,", 80) + "1 * * * *", "UTC", ErrInvalidCron},
		{"* * * * *", "Mars/Olympus", ErrInvalidTimezone}, {"* * * * *", "Local", ErrInvalidTimezone},
		{"* * * * *", "../../etc/passwd", ErrInvalidTimezone}, {"* * * * *", "/etc/localtime", ErrInvalidTimezone},
	} {
		if _, err := Parse(c.expr, c.tz); !errors.Is(err, c.want) {
			t.Errorf("Parse(%q, %q) = %v, want %v", c.expr, c.tz, err, c.want)
		}
	}
}

// FuzzParse: any expression and zone either parse (and their next due
// time is after the start, or zero) or fail with one of the two errors;
// nothing panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"* * * * *", "0 9 * * 1-5", "*/15 0-6 1,15 * MON", "@hourly", "61 * * * *", "0 0 30 2 *", "1-5/0 * * * *", "? * * * *", "0 0 L * 5-7", "0 0 15,L * 1-7/2", "50-10/7 22-2/3 30-2 NOV-FEB FRI-MON", "0 9 L * mon-wed#2,l5"} {
		f.Add(s, "UTC")
		f.Add(s, "Europe/Paris")
	}
	f.Add("* * * * *", "America/Argentina/Buenos_Aires")
	f.Fuzz(func(t *testing.T, expr, tz string) {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				panic(fmt.Sprintf("Parse(%q, %q) and Next hang", expr, tz))
			}
		}()
		s, err := Parse(expr, tz)
		if err != nil {
			if !errors.Is(err, ErrInvalidCron) && !errors.Is(err, ErrInvalidTimezone) {
				t.Fatalf("Parse(%q, %q): unclassified error %v", expr, tz, err)
			}
			return
		}
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if n := s.Next(start); !n.IsZero() && !n.After(start) {
			t.Fatalf("Parse(%q, %q).Next(%s) = %s, not after", expr, tz, start, n)
		}
	})
}
