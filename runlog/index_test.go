package runlog_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/agentryhq/agentry/runlog"
)

func TestParseIndex(t *testing.T) {
	for in, want := range map[string]int64{"": -1, "-1": -1, "0": 0, "7": 7, "9007199254740992": runlog.MaxIndex} {
		if got, err := runlog.ParseIndex(in); err != nil || got != want {
			t.Errorf("%q: %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"-2", "-0", "+1", "01", " 1", "1 ", "1.0", "1e3", "0x1", "9007199254740993", "99999999999999999999", "٣", "-", "\x00"} {
		if _, err := runlog.ParseIndex(in); !errors.Is(err, runlog.ErrBadIndex) {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// FuzzParseIndex: any text is refused with ErrBadIndex, or is an index from
// -1 to MaxIndex that prints back to the same text.
func FuzzParseIndex(f *testing.F) {
	for _, s := range []string{"", "0", "-1", "42", "-0", "01", "+1", " 1", "9007199254740992", "9007199254740993", "1e3", "\x00", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := runlog.ParseIndex(s)
		if err != nil {
			if !errors.Is(err, runlog.ErrBadIndex) {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if n < -1 || n > runlog.MaxIndex {
			t.Fatalf("%q parsed to %d", s, n)
		}
		if s != "" && strconv.FormatInt(n, 10) != s {
			t.Fatalf("%q parsed to %d, which prints differently", s, n)
		}
	})
}
