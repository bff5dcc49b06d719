package wirecheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestCheckID_RefusesLongAndControlIDs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		id string
		ok bool
	}{
		{"", true},
		{"session-1", true},
		{strings.Repeat("é", MaxIDBytes/2), true},
		{strings.Repeat("s", MaxIDBytes), true},
		{strings.Repeat("s", MaxIDBytes+1), false},
		{"s\n1", false},
		{"s\x00", false},
		{"s\u0085", false},
		{"tab\t", false},
	} {
		err := CheckID("session_id", c.id)
		if c.ok != (err == nil) {
			t.Errorf("CheckID(%q) = %v, want ok %v", c.id, err, c.ok)
		}
		if err != nil && (!errors.Is(err, ErrInvalidID) || err.Error() != "session_id must be at most 255 bytes without control characters") {
			t.Errorf("CheckID(%q) = %q, want ErrInvalidID naming session_id", c.id, err)
		}
	}
}

func TestEscapesNUL(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		`{}`:                 false,
		`{"a":"\u0000"}`:     true,
		`{"a\u0000":1}`:      true,
		`["x","y\u0000z"]`:   true,
		`{"a":"\\u0000"}`:    false,
		`{"a":"\\\u0000"}`:   true,
		`{"a":"\u00000"}`:    true,
		`{"a":"\u0001"}`:     false,
		`{"a":"u0000"}`:      false,
		`{"a":"\\\\u0000"}`:  false,
		`{"a":"\"\u0000"}`:   true,
		`{"a":"trailing\\"}`: false,
	} {
		if got := EscapesNUL([]byte(body)); got != want {
			t.Errorf("EscapesNUL(%s) = %v, want %v", body, got, want)
		}
	}
}

// FuzzEscapesNUL: on valid JSON, EscapesNUL agrees with reading every
// token (duplicate member names included) and looking for a NUL in each
// string and member name.
func FuzzEscapesNUL(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"\u0000"}`, `{"a":"\\u0000"}`, `{"\u0000":1}`, `["\\\u0000"]`, `{"a":"\u0000","a":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		if got, want := EscapesNUL(body), tokensHoldNUL(t, body); got != want {
			t.Fatalf("EscapesNUL(%q) = %v, a token holds a NUL: %v", body, got, want)
		}
	})
}

func tokensHoldNUL(t *testing.T, body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			t.Fatalf("valid JSON %q: %v", body, err)
		}
		if s, ok := tok.(string); ok && strings.IndexByte(s, 0) >= 0 {
			return true
		}
	}
}
