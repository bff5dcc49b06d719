package agentos

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
)

// TestDeleteSession_ForgetsItsCodeModeState: deleting a session drops its
// CodeMode interpreter and saved variables in the server's CodeModes on
// that database (the session's owner's; another database's CodeMode keeps
// the same session id's).
func TestDeleteSession_ForgetsItsCodeModeState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, other := testdbs.SQLite(t), testdbs.SQLite(t)
	other.ID = "other"
	newCM := func(d *db.DB) *codemode.CodeMode {
		cm, err := codemode.New(codemode.Config{Persist: true, DB: d, Namespace: "codemode/coder"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cm.Close() })
		return cm
	}
	cm, cmOther := newCM(d), newCM(other)
	for _, c := range []*codemode.CodeMode{cm, cmOther} {
		if _, err := c.Run(ctx, "s1", "alice", "let secret = 'in s1'"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeAgent, UserID: "alice"}); err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{DBs: []*db.DB{d, other}, CodeModes: []*codemode.CodeMode{cm, cmOther}}, nil)
	if res := do(t, http.MethodDelete, ts.URL+"/sessions/s1?db_id="+d.ID, nil, nil); res.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", res.status, res.body)
	}
	if n := cm.Sessions(); n != 0 {
		t.Errorf("%d interpreters held after the session's deletion", n)
	}
	typeOf := func(c *codemode.CodeMode) string {
		cell, err := c.Run(ctx, "s1", "alice", "typeof secret")
		if err != nil {
			t.Fatal(err)
		}
		var v string
		_ = json.Unmarshal(cell.Result, &v)
		return v
	}
	if got := typeOf(cm); got != "undefined" {
		t.Errorf("the deleted session's variables are back: typeof secret = %q", got)
	}
	if got := typeOf(cmOther); got != "string" {
		t.Errorf("another database's session of the same id lost its variables: %q", got)
	}
}
