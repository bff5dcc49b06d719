package schedule

import (
	"errors"
	"testing"
	"time"
)

// TestParse_LastDayOfMonth: "L" in the day-of-month field is the month's
// last day, as croniter (Agno's parser) reads it: a month-end schedule Agno
// accepts is accepted here and due on the same days, not refused (and a row
// Agno wrote disabled).
func TestParse_LastDayOfMonth(t *testing.T) {
	t.Parallel()
	at := func(y int, m time.Month, d, h int) time.Time { return time.Date(y, m, d, h, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		expr, tz string
		after    time.Time
		want     []time.Time
	}{
		{"0 0 L * *", "UTC", at(2026, 1, 15, 0), []time.Time{at(2026, 1, 31, 0), at(2026, 2, 28, 0), at(2026, 3, 31, 0), at(2026, 4, 30, 0)}},
		{"0 0 l * *", "UTC", at(2028, 2, 1, 0), []time.Time{at(2028, 2, 29, 0), at(2028, 3, 31, 0)}},
		{"0 9 15,L * *", "UTC", at(2026, 2, 1, 0), []time.Time{at(2026, 2, 15, 9), at(2026, 2, 28, 9), at(2026, 3, 15, 9), at(2026, 3, 31, 9)}},
		{"0 9 L 2 *", "UTC", at(2026, 1, 1, 0), []time.Time{at(2026, 2, 28, 9), at(2027, 2, 28, 9), at(2028, 2, 29, 9)}},
		// With a day of week, either (cron's rule): the last day or Fridays.
		{"0 9 L * 5", "UTC", at(2026, 1, 24, 0), []time.Time{at(2026, 1, 30, 9), at(2026, 1, 31, 9), at(2026, 2, 6, 9)}},
		// The last day in the zone: 31 January 23:00 in New York is 1 February 04:00 UTC.
		{"0 23 L * *", "America/New_York", at(2026, 1, 15, 0), []time.Time{at(2026, 2, 1, 4), at(2026, 3, 1, 4)}},
	} {
		s, err := Parse(c.expr, c.tz)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		n := c.after
		for i, want := range c.want {
			n = s.Next(n)
			if !n.Equal(want) {
				t.Errorf("%q in %s: due time %d = %s, want %s", c.expr, c.tz, i+1, n.UTC(), want)
				break
			}
		}
	}
	for _, expr := range []string{"0 0 L-3 * *", "0 0 L/2 * *", "0 0 LW * *", "0 0 * * L", "0 L * * *", "0 0 L,32 * *", "0 0 ,L * *"} {
		if _, err := Parse(expr, "UTC"); !errors.Is(err, ErrInvalidCron) {
			t.Errorf("Parse(%q) = %v, want ErrInvalidCron", expr, err)
		}
	}
}
