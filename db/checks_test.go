package db

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckUserID_AllocatesOnlyForAnError: every save checks its keys, so a
// clean key must not build the error's description (it did: two string
// concatenations a run save), and a padded one still names what is wrong.
func TestCheckUserID_AllocatesOnlyForAnError(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() {
		if err := checkUserID("run", "run-1", "alice"); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a clean check allocates %v times", n)
	}
	for _, c := range []struct{ id, user, want string }{
		{"run-1 ", "alice", `run id "run-1 " ends in a space`},
		{"run-1", "alice ", `user_id of run run-1 "alice " ends in a space`},
	} {
		err := checkUserID("run", c.id, c.user)
		if !errors.Is(err, ErrInvalidRecord) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("checkUserID(%q, %q) = %v, want %q", c.id, c.user, err, c.want)
		}
	}
}
