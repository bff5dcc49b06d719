package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/robfig/cron/v3"
)

// Errors of Parse.
var (
	// ErrInvalidCron: the expression is not a 5-field cron expression or a
	// descriptor (@hourly, @daily, …).
	ErrInvalidCron = errors.New("schedule: invalid cron expression")
	// ErrInvalidTimezone: the time zone is not an IANA name (or UTC).
	ErrInvalidTimezone = errors.New("schedule: invalid timezone")
)

// Bounds of the stored strings (Agno's field limits).
const (
	MaxCronExpr = 128
	MaxTimezone = 64
)

// parser reads standard 5-field expressions and descriptors; @every is
// refused (it is relative to the parse time, not a calendar schedule).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Spec is a parsed cron expression in a time zone.
type Spec struct {
	sched cron.Schedule
	loc   *time.Location
	// everyHour: the expression matches every hour of the day (*, @hourly),
	// so the hour a clock repeats when daylight saving time ends is due
	// again: that hour really passes twice.
	everyHour bool
}

// Parse parses a 5-field cron expression evaluated in the IANA time zone tz
// ("" is UTC). Time zone prefixes inside the expression (CRON_TZ=, TZ=) are
// refused: the zone is its own field.
func Parse(expr, tz string) (*Spec, error) {
	loc, err := LoadZone(tz)
	if err != nil {
		return nil, err
	}
	e := strings.TrimSpace(expr)
	switch {
	case e == "" || len(expr) > MaxCronExpr || !utf8.ValidString(expr):
		return nil, fmt.Errorf("%w: %q (5 fields: minute hour day-of-month month day-of-week)", ErrInvalidCron, expr)
	case strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ="):
		return nil, fmt.Errorf("%w: %q: give the time zone in the timezone field, not in the expression", ErrInvalidCron, expr)
	case strings.HasPrefix(e, "@every"):
		return nil, fmt.Errorf("%w: %q: @every is not a calendar schedule; use a cron expression", ErrInvalidCron, expr)
	}
	s, err := parser.Parse(e)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalidCron, expr, err)
	}
	everyHour := true
	if ss, ok := s.(*cron.SpecSchedule); ok {
		const day = 1<<24 - 1
		everyHour = ss.Hour&day == day
	}
	return &Spec{sched: s, loc: loc, everyHour: everyHour}, nil
}

// LoadZone loads an IANA time zone; "" is UTC. Local (the server's zone)
// is refused: a schedule must mean the same on every replica.
func LoadZone(tz string) (*time.Location, error) {
	switch {
	case tz == "" || tz == "UTC":
		return time.UTC, nil
	case len(tz) > MaxTimezone || !utf8.ValidString(tz) || tz == "Local" || strings.ContainsAny(tz, "\x00\\") ||
		strings.HasPrefix(tz, "/") || strings.Contains(tz, ".."):
		return nil, fmt.Errorf("%w: %q", ErrInvalidTimezone, tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTimezone, tz)
	}
	return loc, nil
}

// Next returns the first due time strictly after t (the zero time when
// the expression never matches, e.g. 30 February).
//
// Due times are wall-clock times of the zone, each due once: one that does
// not exist (in the hour skipped when daylight saving time starts) is not
// due, and one the clock shows twice (in the hour repeated when it ends) is
// due the first time only, as cron does for jobs at fixed hours: "30 1 * *
// *" runs once on that day, not twice. An expression matching every hour
// ("0 * * * *") is due in both passes of the repeated hour.
func (s *Spec) Next(t time.Time) time.Time {
	n := s.sched.Next(t.In(s.loc))
	for !s.everyHour && !n.IsZero() && repeatedWallTime(n) {
		n = s.sched.Next(n)
	}
	return n
}

// repeatedWallTime reports whether t's wall-clock time was shown before,
// in the hour a zone's clock turned back (daylight saving time's end).
func repeatedWallTime(t time.Time) bool {
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return false
	}
	_, before := start.Add(-time.Second).Zone()
	_, now := t.Zone()
	back := time.Duration(before-now) * time.Second
	return back > 0 && t.Sub(start) < back
}
