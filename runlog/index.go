package runlog

import (
	"errors"
	"fmt"
	"strconv"
)

// MaxIndex bounds an event index a client sends back: no larger one is
// ever sent (2^53, the largest integer every JSON reader keeps exactly).
const MaxIndex = 1 << 53

// ErrBadIndex: a Last-Event-ID or last_event_index that is not an index.
var ErrBadIndex = errors.New("runlog: not an event index")

// ParseIndex reads the index of the last event a client received (an SSE
// Last-Event-ID or Agno's last_event_index): a decimal integer from -1
// (nothing received yet) to MaxIndex, written as the server writes it (no
// sign but "-" for -1, no leading zero, no spaces). Empty means -1.
func ParseIndex(v string) (int64, error) {
	if v == "" {
		return -1, nil
	}
	if len(v) > 17 || v == "-0" || v[0] == '+' || (v[0] == '0' && len(v) > 1) || (len(v) > 1 && v[0] == '-' && v[1] == '0') {
		return 0, fmt.Errorf("%w: %q", ErrBadIndex, v)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < -1 || n > MaxIndex {
		return 0, fmt.Errorf("%w: %q", ErrBadIndex, v)
	}
	return n, nil
}
