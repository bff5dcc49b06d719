package schedule

import (
	"errors"
	"testing"
	"time"
)

// TestParse_DescriptorsInAnyCase: a descriptor is read in any case, as
// croniter (Agno's parser) reads it ("@DAILY" is @daily); @every stays
// refused in any case.
func TestParse_DescriptorsInAnyCase(t *testing.T) {
	t.Parallel()
	after := time.Date(2026, 3, 4, 5, 6, 0, 0, time.UTC)
	for expr, want := range map[string]time.Time{
		"@DAILY": time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC), "@Hourly": time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC),
		"@Monthly": time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), " @YEARLY ": time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		s, err := Parse(expr, "UTC")
		if err != nil {
			t.Errorf("Parse(%q): %v", expr, err)
			continue
		}
		if got := s.Next(after); !got.Equal(want) {
			t.Errorf("%q after %s = %s, want %s", expr, after, got, want)
		}
	}
	for _, expr := range []string{"@EVERY 5m", "@Every 1h", "@reboot", "@DAILYX"} {
		if _, err := Parse(expr, "UTC"); !errors.Is(err, ErrInvalidCron) {
			t.Errorf("Parse(%q) = %v, want ErrInvalidCron", expr, err)
		}
	}
}
