package schedule

import (
	"errors"
	"testing"
	"time"
)

// TestLoadZone_IgnoresCase: a zone name in another case is the zone, as
// pytz (Agno's zone lookup) reads it: a schedule Agno stored with "utc" or
// "america/new_york" is due at that zone's times, not refused (and a row
// Agno wrote disabled as invalid).
func TestLoadZone_IgnoresCase(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct{ tz, want string }{
		{"utc", "UTC"}, {"Utc", "UTC"}, {"america/new_york", "America/New_York"}, {"EUROPE/PARIS", "Europe/Paris"},
		{"us/eastern", "US/Eastern"}, {"america/port-au-prince", "America/Port-au-Prince"},
		{"america/argentina/buenos_aires", "America/Argentina/Buenos_Aires"}, {"etc/gmt+5", "Etc/GMT+5"},
	} {
		got, err := LoadZone(c.tz)
		if err != nil {
			t.Errorf("LoadZone(%q): %v", c.tz, err)
			continue
		}
		want, err := time.LoadLocation(c.want)
		if err != nil {
			t.Fatal(err)
		}
		gn, goff := at.In(got).Zone()
		wn, woff := at.In(want).Zone()
		if gn != wn || goff != woff {
			t.Errorf("LoadZone(%q) at %s = %s %d, want %s's %s %d", c.tz, at, gn, goff, c.want, wn, woff)
		}
		if _, err := Parse("0 9 * * *", c.tz); err != nil {
			t.Errorf("Parse in %q: %v", c.tz, err)
		}
	}
	for _, tz := range []string{"mars/olympus", "local", "localtime", "LocalTime", "posix/localtime", "america/../europe/paris", "america//new_york", "america/new_york/", "america/new_york.", "zone.tab"} {
		if _, err := LoadZone(tz); !errors.Is(err, ErrInvalidTimezone) {
			t.Errorf("LoadZone(%q) = %v, want ErrInvalidTimezone", tz, err)
		}
	}
}
