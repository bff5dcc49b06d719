package schedule

import (
	"errors"
	"testing"
	"time"
)

// TestParse_NthWeekday: croniter's nth weekday of the month in the
// day-of-week field ("1#1" the first Monday, "mon-fri#2", "l5" the last
// Friday) is read as croniter (Agno's parser) reads it: a first-Monday
// schedule Agno accepts is due on the same days, not refused (and a row
// Agno wrote disabled).
func TestParse_NthWeekday(t *testing.T) {
	t.Parallel()
	at := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 9, 0, 0, 0, time.UTC) }
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // a Thursday
	for _, c := range []struct {
		expr string
		want []time.Time
	}{
		{"0 9 * * 1#1", []time.Time{at(2026, 1, 5), at(2026, 2, 2), at(2026, 3, 2)}},
		{"0 9 * * MON#1", []time.Time{at(2026, 1, 5), at(2026, 2, 2)}},
		{"0 9 * * 5#3,1#1", []time.Time{at(2026, 1, 5), at(2026, 1, 16), at(2026, 2, 2), at(2026, 2, 20)}},
		{"0 9 * * 7#1", []time.Time{at(2026, 1, 4), at(2026, 2, 1)}},
		{"0 9 * * 4#5", []time.Time{at(2026, 1, 29), at(2026, 4, 30)}},
		{"0 9 * * l5", []time.Time{at(2026, 1, 30), at(2026, 2, 27), at(2026, 3, 27)}},
		{"0 9 * * L0", []time.Time{at(2026, 1, 25), at(2026, 2, 22)}},
		{"0 9 * * mon-wed#2", []time.Time{at(2026, 1, 12), at(2026, 1, 13), at(2026, 1, 14), at(2026, 2, 9)}},
		// With a day of month, either (cron's rule): the 3rd or the first Monday.
		{"0 9 3 * 1#1", []time.Time{at(2026, 1, 3), at(2026, 1, 5), at(2026, 2, 2), at(2026, 2, 3)}},
	} {
		s, err := Parse(c.expr, "UTC")
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		n := start
		for i, want := range c.want {
			n = s.Next(n)
			if !n.Equal(want) {
				t.Errorf("%q: due time %d = %s, want %s", c.expr, i+1, n.UTC(), want)
				break
			}
		}
	}
	for _, expr := range []string{"0 9 * * 1#0", "0 9 * * 1#6", "0 9 * * 1#", "0 9 * * #1", "0 9 * * 8#1", "0 9 * * 1,2#1",
		"0 9 * * l8", "0 9 * * l", "0 9 * * 1#1/2", "0 9 1#1 * *"} {
		if _, err := Parse(expr, "UTC"); !errors.Is(err, ErrInvalidCron) {
			t.Errorf("Parse(%q) = %v, want ErrInvalidCron", expr, err)
		}
	}
}
