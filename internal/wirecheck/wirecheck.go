package wirecheck

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/agentryhq/agentry/db"
)

// MaxIDBytes bounds an id (session, run, user, component): the size of the
// id columns.
const MaxIDBytes = db.MaxUserIDBytes

// ErrInvalidID is matched by CheckID's errors.
var ErrInvalidID = errors.New("invalid id")

// idError names the id refused; its text is what the client reads.
type idError struct{ name string }

func (e *idError) Error() string {
	return fmt.Sprintf("%s must be at most %d bytes without control characters", e.name, MaxIDBytes)
}

func (e *idError) Is(target error) bool { return target == ErrInvalidID }

// CheckID refuses an id longer than MaxIDBytes or holding a control
// character, with an error naming it (name) and matching ErrInvalidID. The
// empty id passes: whether one is required is the caller's business.
func CheckID(name, v string) error {
	if len(v) > MaxIDBytes || strings.ContainsFunc(v, unicode.IsControl) {
		return &idError{name: name}
	}
	return nil
}

// EscapesNUL reports whether the valid JSON text body holds a string (or a
// member name) with an escaped NUL (\u0000; a raw one is not valid JSON).
// Postgres stores no NUL in text or jsonb, so such a value would fail there
// after the work was done (and be stored as given elsewhere).
func EscapesNUL(body []byte) bool {
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if bytes.HasPrefix(body[i+1:], []byte("u0000")) {
			return true
		}
		i++ // the escaped character: \\u0000 is a backslash, then text
	}
	return false
}
