package agentos

import (
	"strconv"
	"testing"

	"github.com/agentryhq/agentry/runlog"
)

// FuzzParseEventIndex: any header value is either refused with a 400 or is
// an index from -1 to 2^53 that prints back to the same text.
func FuzzParseEventIndex(f *testing.F) {
	for _, s := range []string{"", "0", "-1", "42", "-0", "01", "+1", " 1", "9007199254740992", "9007199254740993", "1e3", "\x00", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseEventIndex("Last-Event-ID", s)
		if err != nil {
			he, ok := err.(*httpError)
			if !ok || he.Status != 400 || he.Detail == "" {
				t.Fatalf("%q: error %v is not a 400 with a detail", s, err)
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
