package schedule

import (
	"testing"
	"time"
)

// TestNext_ClockChanges: due times on the days a zone's clock jumps. A
// wall time that does not exist is not due (the next day's is); one the
// clock shows twice is due once, at its first pass, unless the expression
// matches every hour; every other wall time of the day is due once.
// robfig/cron's Next skipped 03:00 on both of Lord Howe's change days (it
// steps an hour of elapsed time, which lands on :30 across a 30-minute
// shift) and never returned for a day Apia skipped.
func TestNext_ClockChanges(t *testing.T) {
	t.Parallel()
	utc := func(y int, mo time.Month, d, h, mi int) time.Time { return time.Date(y, mo, d, h, mi, 0, 0, time.UTC) }
	for _, c := range []struct {
		name, expr, tz string
		after, want    time.Time
	}{
		// New York: 2026-03-08 02:00 EST → 03:00 EDT; 2026-11-01 02:00 EDT → 01:00 EST.
		{"ny gap skipped", "30 2 * * *", "America/New_York", utc(2026, 3, 7, 12, 0), utc(2026, 3, 9, 6, 30)},
		{"ny after gap", "0 3 * * *", "America/New_York", utc(2026, 3, 7, 12, 0), utc(2026, 3, 8, 7, 0)},
		{"ny overlap first pass", "30 1 * * *", "America/New_York", utc(2026, 10, 31, 12, 0), utc(2026, 11, 1, 5, 30)},
		{"ny overlap once", "30 1 * * *", "America/New_York", utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)},
		{"ny overlap hourly twice", "30 * * * *", "America/New_York", utc(2026, 11, 1, 5, 30), utc(2026, 11, 1, 6, 30)},
		// London: 2026-03-29 01:00 GMT → 02:00 BST; 2026-10-25 02:00 BST → 01:00 GMT.
		{"london gap skipped", "30 1 * * *", "Europe/London", utc(2026, 3, 28, 12, 0), utc(2026, 3, 30, 0, 30)},
		{"london 02:00 after gap", "0 2 * * *", "Europe/London", utc(2026, 3, 28, 12, 0), utc(2026, 3, 29, 1, 0)},
		{"london overlap first pass", "0 1 * * *", "Europe/London", utc(2026, 10, 24, 12, 0), utc(2026, 10, 25, 0, 0)},
		{"london overlap once", "0 1 * * *", "Europe/London", utc(2026, 10, 25, 0, 0), utc(2026, 10, 26, 1, 0)},
		// Lord Howe: 2026-04-05 02:00 (+11) → 01:30 (+10:30); 2026-10-04 02:00 (+10:30) → 02:30 (+11).
		{"lord howe 03:00 after fall back", "0 3 * * *", "Australia/Lord_Howe", utc(2026, 4, 4, 12, 0), utc(2026, 4, 4, 16, 30)},
		{"lord howe 02:00 shown once", "0 2 * * *", "Australia/Lord_Howe", utc(2026, 4, 4, 12, 0), utc(2026, 4, 4, 15, 30)},
		{"lord howe overlap first pass", "45 1 * * *", "Australia/Lord_Howe", utc(2026, 4, 4, 14, 0), utc(2026, 4, 4, 14, 45)},
		{"lord howe overlap once", "45 1 * * *", "Australia/Lord_Howe", utc(2026, 4, 4, 14, 45), utc(2026, 4, 5, 15, 15)},
		{"lord howe overlap quarter-hourly twice", "*/15 * * * *", "Australia/Lord_Howe", utc(2026, 4, 4, 14, 45), utc(2026, 4, 4, 15, 0)},
		{"lord howe before gap", "30 1 * * *", "Australia/Lord_Howe", utc(2026, 10, 3, 12, 0), utc(2026, 10, 3, 15, 0)},
		{"lord howe gap skipped", "15 2 * * *", "Australia/Lord_Howe", utc(2026, 10, 3, 12, 0), utc(2026, 10, 4, 15, 15)},
		{"lord howe 03:00 after spring forward", "0 3 * * *", "Australia/Lord_Howe", utc(2026, 10, 3, 12, 0), utc(2026, 10, 3, 16, 0)},
		{"lord howe midnight after spring forward", "0 0 * * *", "Australia/Lord_Howe", utc(2026, 10, 3, 14, 0), utc(2026, 10, 4, 13, 0)},
		// Apia skipped 30 December 2011 (-10 → +14 at midnight).
		{"apia skipped day", "0 12 30 12 *", "Pacific/Apia", utc(2011, 12, 1, 0, 0), utc(2012, 12, 29, 22, 0)},
		{"apia day after skip", "0 12 * * *", "Pacific/Apia", utc(2011, 12, 29, 23, 0), utc(2011, 12, 30, 22, 0)},
		// São Paulo's midnight did not exist on 2018-11-04 (00:00 -03 → 01:00 -02).
		{"sao paulo midnight gap", "0 0 * * *", "America/Sao_Paulo", utc(2018, 11, 3, 12, 0), utc(2018, 11, 5, 2, 0)},
		{"sao paulo 01:00 after gap", "0 1 * * *", "America/Sao_Paulo", utc(2018, 11, 3, 12, 0), utc(2018, 11, 4, 3, 0)},
	} {
		s, err := Parse(c.expr, c.tz)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := s.Next(c.after); !got.Equal(c.want) {
			t.Errorf("%s: %q in %s after %s = %s, want %s (%s)", c.name, c.expr, c.tz, c.after, got.UTC(), c.want, c.want.In(s.loc))
		}
	}
}

// TestNext_AgreesWithTheWallClock compares Next, around every clock change
// of several zones in 2011–2012 and 2026, with a minute-by-minute walk of
// the zone's clock: the due instants are those whose wall-clock time
// matches the expression and (unless it matches every hour) was not shown
// before. Next returns exactly those, in order.
func TestNext_AgreesWithTheWallClock(t *testing.T) {
	t.Parallel()
	exprs := []string{"30 2 * * *", "30 1 * * *", "0 3 * * *", "0 2 * * *", "45 1 * * *", "15 2 * * *", "0 0 * * *",
		"*/20 1 * * *", "0 * * * *", "30 * * * *", "*/15 * * * *", "0 1-3 * * *", "0 0 29,30,31 12 *", "0 0 * * 5", "59 23 * * *"}
	zones := []string{"America/New_York", "Europe/London", "Australia/Lord_Howe", "Pacific/Apia", "America/Sao_Paulo",
		"Pacific/Chatham", "Antarctica/Troll", "America/St_Johns", "Asia/Kathmandu"}
	type minute struct {
		at       time.Time
		repeated bool
	}
	for _, tz := range zones {
		loc, err := LoadZone(tz)
		if err != nil {
			t.Fatal(err)
		}
		for _, span := range [][2]time.Time{
			{time.Date(2011, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2013, 1, 1, 0, 0, 0, 0, time.UTC)},
			{time.Date(2018, 10, 1, 0, 0, 0, 0, time.UTC), time.Date(2019, 3, 1, 0, 0, 0, 0, time.UTC)},
			{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		} {
			for tr := span[0]; ; {
				_, end := tr.In(loc).ZoneBounds()
				if end.IsZero() || end.After(span[1]) {
					break
				}
				tr = end
				// The minutes of the four days around the change.
				from, to := tr.Add(-48*time.Hour).Truncate(time.Hour), tr.Add(48*time.Hour)
				var clock []minute
				seen := map[string]bool{}
				for m := from; !m.After(to); m = m.Add(time.Minute) {
					k := m.In(loc).Format("2006-01-02 15:04")
					clock = append(clock, minute{m, seen[k]})
					seen[k] = true
				}
				for _, expr := range exprs {
					s, err := Parse(expr, tz)
					if err != nil {
						t.Fatal(err)
					}
					var want []time.Time
					for _, m := range clock[1:] {
						if s.matches(m.at.In(loc)) && (s.everyHour || !m.repeated) {
							want = append(want, m.at)
						}
					}
					var got []time.Time
					for n := s.Next(from); !n.IsZero() && !n.After(to); n = s.Next(n) {
						got = append(got, n)
					}
					if !equalTimes(got, want) {
						t.Errorf("%q in %s around %s:\n got %v\nwant %v", expr, tz, tr.In(loc), localTimes(got, loc), localTimes(want, loc))
					}
				}
			}
		}
	}
}

// matches reports whether wall-clock time l matches the expression.
func (s *Spec) matches(l time.Time) bool {
	return 1<<uint(l.Minute())&s.sched.Minute > 0 && 1<<uint(l.Hour())&s.sched.Hour > 0 &&
		1<<uint(l.Month())&s.sched.Month > 0 && s.dayMatches(l) && l.Second() == 0
}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func localTimes(ts []time.Time, loc *time.Location) []string {
	out := make([]string, len(ts))
	for i, x := range ts {
		out[i] = x.In(loc).Format("01-02 15:04 -0700")
	}
	return out
}
