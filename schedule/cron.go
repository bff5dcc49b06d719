package schedule

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	sched *cron.SpecSchedule
	loc   *time.Location
	// everyHour: the expression matches every hour of the day (*, @hourly),
	// so the hour a clock repeats when daylight saving time ends is due
	// again: that hour really passes twice.
	everyHour bool
	// lastDay: the day-of-month field has L, the month's last day.
	lastDay bool
	// nth: the day-of-week field names weekdays by their place in the
	// month (croniter's "1#2", "l5"): weekday → places, -1 the last.
	nth map[int][]int
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
	if strings.HasPrefix(e, "@") {
		e = strings.ToLower(e) // "@DAILY", as croniter reads it
	}
	switch {
	case e == "" || len(expr) > MaxCronExpr || !utf8.ValidString(expr):
		return nil, fmt.Errorf("%w: %q (5 fields: minute hour day-of-month month day-of-week)", ErrInvalidCron, expr)
	case strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ="):
		return nil, fmt.Errorf("%w: %q: give the time zone in the timezone field, not in the expression", ErrInvalidCron, expr)
	case strings.HasPrefix(e, "@every"):
		return nil, fmt.Errorf("%w: %q: @every is not a calendar schedule; use a cron expression", ErrInvalidCron, expr)
	}
	lastDay, onlyLast := false, false
	var nth map[int][]int
	if f := strings.Fields(e); len(f) == 5 {
		f[2], lastDay, onlyLast = lastOfMonth(f[2])
		f[4], nth = nthWeekdays(f[4])
		f[4] = sundaySeven(f[4])
		for i, b := range fieldBounds {
			f[i] = wrapRanges(f[i], b, i == 4)
		}
		e = strings.Join(f, " ")
	}
	s, err := parser.Parse(e)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalidCron, expr, err)
	}
	ss, ok := s.(*cron.SpecSchedule)
	if !ok { // only @every builds another kind, and it is refused above
		return nil, fmt.Errorf("%w: %q", ErrInvalidCron, expr)
	}
	if onlyLast {
		ss.Dom = 0 // the placeholder lastOfMonth gave robfig/cron
	}
	const day = 1<<24 - 1
	return &Spec{sched: ss, loc: loc, everyHour: ss.Hour&day == day, lastDay: lastDay, nth: nth}, nil
}

// nthWeekdays takes croniter's nth weekdays out of a day-of-week field for
// robfig/cron, which has none: "D#n" (the month's nth D, n 1-5; D a day,
// its name or a range of them) and "lD" (the month's last D). It returns
// the weekdays as a plain list and their places; a field that has none, or
// mixes them with plain days (croniter refuses that), or that it cannot
// read, is returned as it is (robfig/cron refuses what it cannot read).
func nthWeekdays(expr string) (string, map[int][]int) {
	if !strings.ContainsAny(expr, "#lL") {
		return expr, nil
	}
	nth := map[int][]int{}
	var days []string
	for _, it := range strings.Split(expr, ",") {
		var from, to, place int
		if d, n, ok := strings.Cut(it, "#"); ok {
			p, ok := number(n)
			if !ok || p < 1 || p > 5 {
				return expr, nil
			}
			a, z, ranged := strings.Cut(d, "-")
			if !ranged {
				z = a
			}
			var ok1, ok2 bool
			from, ok1 = fieldValue(a, weekdays)
			to, ok2 = fieldValue(z, weekdays)
			if !ok1 || !ok2 {
				return expr, nil
			}
			place = p
		} else if len(it) > 1 && (it[0] == 'l' || it[0] == 'L') {
			d, ok := number(it[1:])
			if !ok {
				return expr, nil
			}
			from, to, place = d, d, -1
		} else {
			return expr, nil
		}
		if from == 7 {
			from = 0
		}
		if to == 7 {
			to = 0
		}
		if from > to || to > 6 {
			return expr, nil
		}
		for d := from; d <= to; d++ {
			if !slices.Contains(nth[d], place) {
				nth[d] = append(nth[d], place)
			}
			days = append(days, strconv.Itoa(d))
		}
	}
	return strings.Join(days, ","), nth
}

// lastOfMonth takes L (the month's last day, as croniter, Agno's parser,
// reads it) out of a day-of-month field for robfig/cron, which has no L:
// last reports it was there, only that nothing else was (the field
// returned is then a placeholder whose days Parse clears).
func lastOfMonth(field string) (rest string, last, only bool) {
	items := strings.Split(field, ",")
	kept := items[:0]
	for _, it := range items {
		if strings.EqualFold(it, "L") {
			last = true
			continue
		}
		kept = append(kept, it)
	}
	switch {
	case !last:
		return field, false, false
	case len(kept) == 0:
		return "1", true, true
	}
	return strings.Join(kept, ","), true, false
}

// sundaySeven rewrites a day-of-week field so that 7, which cron and
// croniter (Agno's parser) also take for Sunday, reads as 0: robfig/cron
// takes 0-6 only, and a schedule Agno accepts ("0 9 * * 7", "5-7") must
// not be refused here, nor disabled when Agno wrote it. An item it cannot
// read is left as it is, for robfig/cron to refuse.
func sundaySeven(field string) string {
	items := strings.Split(field, ",")
	for i, it := range items {
		rng, step, stepped := strings.Cut(it, "/")
		lo, hi, ranged := strings.Cut(rng, "-")
		if !ranged {
			hi = lo
		}
		if n, ok := number(hi); !ok || n != 7 {
			continue
		}
		by, ok := stepOf(step, stepped)
		if !ok {
			continue
		}
		from, ok := number(lo)
		if !ok {
			from, ok = weekdays[strings.ToLower(lo)]
		}
		switch {
		case !ok || from > 7:
		case from == 7: // "7", "7-7", "7/n" (7 to the maximum, 7)
			items[i] = "0"
		default:
			items[i] = strconv.Itoa(from) + "-6"
			if stepped {
				items[i] += "/" + step
			}
			if (7-from)%by == 0 {
				items[i] += ",0"
			}
		}
	}
	return strings.Join(items, ",")
}

// stepOf is an item's step ("/n"): 1 when it has none; ok is false for a
// step that is not a positive number (the item is left to robfig/cron).
func stepOf(step string, stepped bool) (by int, ok bool) {
	if !stepped {
		return 1, true
	}
	n, ok := number(step)
	return n, ok && n >= 1
}

// field is the values (lo to hi) and names of an expression's field.
type field struct {
	lo, hi int
	names  map[string]int
}

// fieldBounds are the fields, minute to day of week.
var fieldBounds = [5]field{{0, 59, nil}, {0, 23, nil}, {1, 31, nil}, {1, 12, months}, {0, 6, weekdays}}

// wrapRanges rewrites a field's ranges whose end comes before their start
// ("22-2" hours, "FRI-MON", "NOV-FEB"), which robfig/cron refuses and
// croniter (Agno's parser) reads as running past the field's maximum back
// to its minimum, as the values croniter expands them to: from the start
// to the maximum by the step, then from the minimum (where croniter
// restarts the step) to the end. In day-of-week a start of 7 is Sunday.
// An item it cannot read is left as it is, for robfig/cron to refuse.
func wrapRanges(expr string, b field, dow bool) string {
	items := strings.Split(expr, ",")
	for i, it := range items {
		rng, step, stepped := strings.Cut(it, "/")
		a, z, ranged := strings.Cut(rng, "-")
		if !ranged {
			continue
		}
		by, ok := stepOf(step, stepped)
		if !ok {
			continue
		}
		from, ok1 := fieldValue(a, b.names)
		to, ok2 := fieldValue(z, b.names)
		seven := dow && from == 7
		if seven {
			from = 0
		}
		if !ok1 || !ok2 || from < b.lo || from > b.hi || to < b.lo || to > b.hi || (from <= to && !seven) {
			continue
		}
		var vals []string
		if from <= to { // 7-n in day-of-week: 0-n
			for v := from; v <= to; v += by {
				vals = append(vals, strconv.Itoa(v))
			}
		} else {
			last := from
			for v := from; v <= b.hi; v += by {
				vals, last = append(vals, strconv.Itoa(v)), v
			}
			skip := 0
			if after := b.hi - last; last-b.lo+by > b.hi-b.lo+1 && after < by {
				skip = by - after
			}
			for v := b.lo + skip; v <= to; v += by {
				vals = append(vals, strconv.Itoa(v))
			}
		}
		items[i] = strings.Join(vals, ",")
	}
	return strings.Join(items, ",")
}

// fieldValue reads a field's number or name.
func fieldValue(s string, names map[string]int) (int, bool) {
	if n, ok := number(s); ok {
		return n, true
	}
	n, ok := names[strings.ToLower(s)]
	return n, ok
}

// months are the month names robfig/cron reads.
var months = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}

// weekdays are the day-of-week names robfig/cron reads.
var weekdays = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

// number reads a field's unsigned decimal number.
func number(s string) (int, bool) {
	if s == "" || len(s) > 4 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// LoadZone loads an IANA time zone; "" is UTC. A name is read in any
// case ("utc", "america/new_york"), as pytz, Agno's zone lookup, reads it.
// The server's own zone (Local, localtime) is refused: a schedule must mean
// the same on every replica.
func LoadZone(tz string) (*time.Location, error) {
	switch {
	case tz == "" || strings.EqualFold(tz, "UTC"):
		return time.UTC, nil
	case len(tz) > MaxTimezone || !utf8.ValidString(tz) || strings.EqualFold(tz, "Local") || strings.ContainsAny(tz, "\x00\\") ||
		strings.HasPrefix(tz, "/") || strings.Contains(tz, "..") || slices.ContainsFunc(strings.Split(tz, "/"), isLocaltime):
		return nil, fmt.Errorf("%w: %q", ErrInvalidTimezone, tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		if name, ok := foldZone(tz); ok {
			loc, err = time.LoadLocation(name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTimezone, tz)
	}
	return loc, nil
}

// isLocaltime reports whether a zone name's part is localtime: the
// server's zone (a link to /etc/localtime in the zoneinfo directory).
func isLocaltime(part string) bool { return strings.EqualFold(part, "localtime") }

// zoneDirs are where the time package looks for zone files on Unix
// (after $ZONEINFO).
var zoneDirs = []string{"/usr/share/zoneinfo/", "/usr/share/lib/zoneinfo/", "/usr/lib/locale/TZ/", "/etc/zoneinfo/"}

// folded caches foldZone's answers: lower-case name → the zone's name.
var folded sync.Map

// foldZone returns the name of the zone file whose name is tz but for
// case, found in the zone directories (the time package's embedded or
// zipped copy is not searched).
func foldZone(tz string) (string, bool) {
	key := strings.ToLower(tz)
	if name, ok := folded.Load(key); ok {
		return name.(string), true
	}
	dirs := zoneDirs
	if z := os.Getenv("ZONEINFO"); z != "" {
		dirs = append([]string{z}, dirs...)
	}
	for _, dir := range dirs {
		if name, ok := foldPath(dir, strings.Split(tz, "/")); ok {
			folded.Store(key, name)
			return name, true
		}
	}
	return "", false
}

// foldPath finds the path under dir whose parts are parts but for case.
func foldPath(dir string, parts []string) (string, bool) {
	var found []string
	for _, p := range parts {
		if p == "" {
			return "", false
		}
		ents, err := os.ReadDir(filepath.Join(append([]string{dir}, found...)...))
		if err != nil {
			return "", false
		}
		i := slices.IndexFunc(ents, func(e os.DirEntry) bool { return strings.EqualFold(e.Name(), p) })
		if i < 0 {
			return "", false
		}
		found = append(found, ents[i].Name())
	}
	return strings.Join(found, "/"), true
}

// Next returns the first due time strictly after t (the zero time when
// the expression matches no time in the next five years, e.g. 30
// February).
//
// Due times are wall-clock times of the zone, each due once: one that does
// not exist (in the hour skipped when daylight saving time starts, or the
// day Pacific/Apia skipped in 2011) is not due, and one the clock shows
// twice (in the hour repeated when it ends) is due the first time only, as
// cron does for jobs at fixed hours: "30 1 * * *" runs once on that day,
// not twice. An expression matching every hour ("0 * * * *") is due in
// both passes of the repeated hour.
//
// Next walks the zone's wall clock itself rather than using robfig/cron's
// SpecSchedule.Next, which adds hours of elapsed time while it looks for a
// matching hour: across a 30-minute shift (Australia/Lord_Howe) that lands
// on :30 and skips existing times (03:00 on both change days), and it
// loops forever on a day the zone skipped.
func (s *Spec) Next(t time.Time) time.Time {
	// A due instant u after t shows the wall time u+offset(u), which is
	// after t+minOff, minOff the least offset the zone has soon after t
	// (instants later than the window are later by more than any offset).
	lo := wallOf(t, slices.Min(s.offsets(t, t.Add(zoneWindow))))
	var best, stop time.Time
	first := civilDay(lo)
	for day := first; day.Year() <= lo.Year()+horizonYears; day = day.AddDate(0, 0, 1) {
		if 1<<uint(day.Month())&s.sched.Month == 0 {
			day = time.Date(day.Year(), day.Month()+1, 0, 12, 0, 0, 0, time.UTC) // the month's last day
			continue
		}
		if !s.dayMatches(day) {
			continue
		}
		h0, m0 := 0, 0
		if day.Equal(first) {
			h0, m0 = lo.Hour(), lo.Minute()
		}
		for h := h0; h < 24; h++ {
			if 1<<uint(h)&s.sched.Hour == 0 {
				continue
			}
			m1 := 0
			if h == h0 {
				m1 = m0
			}
			for m := m1; m < 60; m++ {
				if 1<<uint(m)&s.sched.Minute == 0 {
					continue
				}
				w := time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, time.UTC)
				switch {
				case !w.After(lo):
					continue
				case !best.IsZero() && w.After(stop):
					return best
				}
				for i, u := range s.instants(w) {
					if i > 0 && !s.everyHour {
						break // the repeated pass of a fixed-hour time
					}
					if u.After(t) && (best.IsZero() || u.Before(best)) {
						// A later wall time can still be an earlier instant
						// (the first pass of the repeated hour is before the
						// second pass of an earlier wall time): keep walking
						// while a wall time may show an instant before best.
						best = u
						stop = wallOf(best, slices.Max(s.offsets(best.Add(-zoneWindow), best)))
					}
				}
			}
		}
	}
	return best
}

const (
	// horizonYears: Next looks this many years ahead (robfig/cron's limit).
	horizonYears = 5
	// zoneWindow exceeds the largest distance between an instant and its
	// wall-clock time (UTC offsets have stayed within ±16 hours).
	zoneWindow = 48 * time.Hour
)

// wallOf is t's wall-clock time at offset off (seconds), as a UTC time.
func wallOf(t time.Time, off int) time.Time {
	return t.UTC().Add(time.Duration(off) * time.Second)
}

// civilDay is the date of wall time w (a UTC time) at noon, where adding
// days never meets a clock change.
func civilDay(w time.Time) time.Time {
	return time.Date(w.Year(), w.Month(), w.Day(), 12, 0, 0, 0, time.UTC)
}

// dayMatches is robfig/cron's rule: when day-of-month or day-of-week is
// *, both must match, else either. L in day-of-month matches the month's
// last day.
func (sp *Spec) dayMatches(day time.Time) bool {
	const star = 1 << 63
	s := sp.sched
	dom := 1<<uint(day.Day())&s.Dom > 0 || (sp.lastDay && day.AddDate(0, 0, 1).Day() == 1)
	dow := 1<<uint(day.Weekday())&s.Dow > 0
	if places := sp.nth[int(day.Weekday())]; dow && places != nil {
		dow = slices.ContainsFunc(places, func(p int) bool {
			if p < 0 {
				return day.AddDate(0, 0, 7).Month() != day.Month()
			}
			return (day.Day()-1)/7+1 == p
		})
	}
	if s.Dom&star > 0 || s.Dow&star > 0 {
		return dom && dow
	}
	return dom || dow
}

// offsets lists the UTC offsets (seconds) the zone has at instants from a
// to b.
func (s *Spec) offsets(a, b time.Time) []int {
	var offs []int
	for x := a; ; {
		lx := x.In(s.loc)
		if _, off := lx.Zone(); !slices.Contains(offs, off) {
			offs = append(offs, off)
		}
		_, end := lx.ZoneBounds()
		if end.IsZero() || end.After(b) || !end.After(x) {
			return offs
		}
		x = end
	}
}

// instants returns the instants whose wall-clock time in the zone is w (a
// UTC time), earliest first: none in a gap, two in a repeated hour.
func (s *Spec) instants(w time.Time) []time.Time {
	var out []time.Time
	for _, off := range s.offsets(w.Add(-zoneWindow), w.Add(zoneWindow)) {
		u := w.Add(-time.Duration(off) * time.Second).In(s.loc)
		if _, o := u.Zone(); o == off && !slices.ContainsFunc(out, u.Equal) {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}
