package schedule

import (
	"errors"
	"testing"
	"time"
)

// TestParse_RangesThatWrap: a range whose end is before its start runs
// past the field's maximum back to its minimum ("22-2" hours: 22, 23, 0,
// 1, 2; "FRI-MON"), as croniter (Agno's parser) reads it: a night or
// weekend schedule Agno accepts is accepted and due at the same times,
// not refused (and a row Agno wrote disabled).
func TestParse_RangesThatWrap(t *testing.T) {
	t.Parallel()
	at := func(m time.Month, d, h int) time.Time { return time.Date(2026, m, d, h, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		expr  string
		after time.Time
		want  []time.Time
	}{
		{"0 22-2 * * *", at(1, 1, 12), []time.Time{at(1, 1, 22), at(1, 1, 23), at(1, 2, 0), at(1, 2, 1), at(1, 2, 2), at(1, 2, 22)}},
		{"0 22-2/2 * * *", at(1, 1, 12), []time.Time{at(1, 1, 22), at(1, 2, 0), at(1, 2, 2), at(1, 2, 22)}},
		// 2026-01-01 is a Thursday.
		{"0 9 * * FRI-MON", at(1, 1, 12), []time.Time{at(1, 2, 9), at(1, 3, 9), at(1, 4, 9), at(1, 5, 9), at(1, 9, 9)}},
		{"0 9 * * 5-1", at(1, 1, 12), []time.Time{at(1, 2, 9), at(1, 3, 9), at(1, 4, 9), at(1, 5, 9), at(1, 9, 9)}},
		{"0 9 * * 7-2", at(1, 1, 12), []time.Time{at(1, 4, 9), at(1, 5, 9), at(1, 6, 9), at(1, 11, 9)}},
		{"0 9 * * sat-tue,thu", at(1, 1, 12), []time.Time{at(1, 3, 9), at(1, 4, 9), at(1, 5, 9), at(1, 6, 9), at(1, 8, 9), at(1, 10, 9)}},
		{"0 0 1 NOV-FEB *", at(1, 15, 0), []time.Time{at(2, 1, 0), at(11, 1, 0), at(12, 1, 0), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"0 9 30-2 * *", at(1, 1, 12), []time.Time{at(1, 2, 9), at(1, 30, 9), at(1, 31, 9), at(2, 1, 9), at(2, 2, 9), at(3, 1, 9)}},
		{"50-10/10 9 * * *", at(1, 1, 0), []time.Time{time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 9, 10, 0, 0, time.UTC),
			time.Date(2026, 1, 1, 9, 50, 0, 0, time.UTC), time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)}},
	} {
		s, err := Parse(c.expr, "UTC")
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		n := c.after
		for i, want := range c.want {
			n = s.Next(n)
			if !n.Equal(want) {
				t.Errorf("%q: due time %d = %s, want %s", c.expr, i+1, n.UTC(), want)
				break
			}
		}
	}
	for _, expr := range []string{"0 25-2 * * *", "0 22-2/0 * * *", "0 9 * * 8-2", "0 9 32-2 * *", "0 0 1 13-2 *", "0 22-x * * *", "0 9 * * FRI-XYZ"} {
		if _, err := Parse(expr, "UTC"); !errors.Is(err, ErrInvalidCron) {
			t.Errorf("Parse(%q) = %v, want ErrInvalidCron", expr, err)
		}
	}
}
