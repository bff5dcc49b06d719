package schedule

import (
	"errors"
	"testing"
	"time"
)

// TestParse_SevenIsSunday: day-of-week 7 is Sunday, as in cron and in
// croniter, which Agno validates and evaluates its expressions with: a
// schedule Agno accepts ("0 9 * * 7", "0 9 * * 5-7") is accepted and due
// on the same days, not refused (and a row Agno wrote disabled).
func TestParse_SevenIsSunday(t *testing.T) {
	t.Parallel()
	// 2026-01-01 is a Thursday.
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	day := func(d int) time.Time { return time.Date(2026, 1, d, 9, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		expr string
		want []time.Time
	}{
		{"0 9 * * 7", []time.Time{day(4), day(11)}},
		{"0 9 * * SUN", []time.Time{day(4), day(11)}},
		{"0 9 * * 5-7", []time.Time{day(2), day(3), day(4), day(9)}},
		{"0 9 * * 6-7", []time.Time{day(3), day(4), day(10)}},
		{"0 9 * * 0-7", []time.Time{day(1), day(2), day(3), day(4), day(5)}},
		{"0 9 * * 1,7", []time.Time{day(4), day(5), day(11)}},
		{"0 9 * * 1-7/2", []time.Time{day(2), day(4), day(5), day(7)}}, // 1,3,5,7: Mon, Wed, Fri, Sun
		{"0 9 * * 7,7", []time.Time{day(4), day(11)}},
		{"0 9 * * 07", []time.Time{day(4), day(11)}},
		{"0 9 * * 4-7", []time.Time{day(1), day(2), day(3), day(4), day(8)}},
		// Day-of-month OR day-of-week, as before: the 2nd and Sundays.
		{"0 9 2 * 7", []time.Time{day(2), day(4), day(11)}},
		// A 7 elsewhere keeps its meaning.
		{"7 9 * * 1", []time.Time{time.Date(2026, 1, 5, 9, 7, 0, 0, time.UTC)}},
	} {
		s, err := Parse(c.expr, "UTC")
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		at := start
		for i, want := range c.want {
			at = s.Next(at)
			if !at.Equal(want) {
				t.Errorf("%q: due time %d = %s, want %s", c.expr, i+1, at, want)
				break
			}
		}
	}
	for _, expr := range []string{"0 9 * * 8", "0 9 * * 5-8", "0 9 * * 7/0", "0 9 * * 1-7/0", "0 9 * * 7-"} {
		if _, err := Parse(expr, "UTC"); !errors.Is(err, ErrInvalidCron) {
			t.Errorf("Parse(%q) = %v, want ErrInvalidCron", expr, err)
		}
	}
}
