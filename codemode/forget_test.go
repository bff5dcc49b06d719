package codemode_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/tool"
)

// savedState reports whether the snapshot at path (sessions/<id> or
// users/<id>) is stored, and which session saved it.
func savedState(t *testing.T, d *db.DB, path string) (bool, string) {
	t.Helper()
	f, err := d.GetFile(context.Background(), codemode.DefaultNamespace, path)
	if errors.Is(err, db.ErrNotFound) {
		return false, ""
	}
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(f.Content), `"session_id":"`)
	from, _, _ := strings.Cut(after, `"`)
	return true, from
}

// Deleting a session forgets its interpreter and its saved state, and the
// user's latest state when that session saved it: neither the session (its
// id used again) nor a new session of the user starts from the deleted
// variables, in this process or after a restart of the server.
func TestForgetSession_DeletesTheSessionsInterpreterAndSavedState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d})
	runAs(t, cm, "s1", "alice", "let secret = 'deleted with s1'")
	if ok, from := savedState(t, d, "users/alice"); !ok || from != "s1" {
		t.Fatalf("alice's latest: stored %v, from %q", ok, from)
	}
	if err := cm.ForgetSession(ctx, "s1", "alice"); err != nil {
		t.Fatal(err)
	}
	if n := cm.Sessions(); n != 0 {
		t.Fatalf("%d interpreters held after forgetting the only one", n)
	}
	for _, p := range []string{"sessions/s1", "users/alice"} {
		if ok, _ := savedState(t, d, p); ok {
			t.Fatalf("%s is still stored", p)
		}
	}
	c := runAs(t, cm, "s1", "alice", "typeof secret")
	if resultOf(t, c) != "undefined" || c.Notice != "" {
		t.Fatalf("s1 used again: %s, want a fresh environment without a notice", c.JSON())
	}
	if c := runAs(t, cm, "s2", "alice", "typeof secret"); resultOf(t, c) != "undefined" {
		t.Fatalf("a new session of alice: %s", c.JSON())
	}

	// Forgetting with nothing in memory (after a restart of the server).
	runAs(t, cm, "s3", "alice", "let later = 3")
	cm.Close()
	cm2 := newCM(t, codemode.Config{Persist: true, DB: reopen(t, path)})
	if err := cm2.ForgetSession(ctx, "s3", "alice"); err != nil {
		t.Fatal(err)
	}
	if c := runAs(t, cm2, "s3", "alice", "typeof later"); resultOf(t, c) != "undefined" {
		t.Fatalf("s3 after it was forgotten: %s", c.JSON())
	}
	if err := cm2.ForgetSession(ctx, "never-seen", "alice"); err != nil {
		t.Fatalf("forgetting an unknown session: %v", err)
	}
}

// Forgetting is scoped to the session's owner: another user's session of
// the same id (its interpreter, its saved state, their latest) is left as
// it is, and the owner's latest state saved by another session is kept.
func TestForgetSession_LeavesWhatAnotherOwnerOrSessionHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d})
	// A Map is not saved: it survives only in the interpreter.
	runAs(t, cm, "s1", "alice", "let mine = 'alice'; const held = new Map([['k', 'alice']])")
	runAs(t, cm, "anon", "", "let mine = 'nobody'; const held = new Map([['k', 'nobody']])")
	for _, f := range []struct{ session, user string }{{"s1", "bob"}, {"s1", ""}, {"anon", "bob"}} {
		if err := cm.ForgetSession(ctx, f.session, f.user); err != nil {
			t.Fatal(err)
		}
	}
	if c := runAs(t, cm, "s1", "alice", "mine + held.get('k')"); resultOf(t, c) != "alicealice" {
		t.Fatalf("alice's s1 after others forgot that id: %s", c.JSON())
	}
	if c := runAs(t, cm, "anon", "", "mine + held.get('k')"); resultOf(t, c) != "nobodynobody" {
		t.Fatalf("the owner-less session after bob forgot that id: %s", c.JSON())
	}
	for _, p := range []string{"sessions/s1", "sessions/anon", "users/alice"} {
		if ok, _ := savedState(t, d, p); !ok {
			t.Fatalf("%s was deleted by another owner's forget", p)
		}
	}

	// The owner-less session is forgotten by its owner, "".
	if err := cm.ForgetSession(ctx, "anon", ""); err != nil {
		t.Fatal(err)
	}
	if ok, _ := savedState(t, d, "sessions/anon"); ok {
		t.Fatal("sessions/anon is still stored")
	}

	// alice's latest was saved by s2: forgetting s1 keeps it.
	runAs(t, cm, "s2", "alice", "let fromS2 = 2")
	if err := cm.ForgetSession(ctx, "s1", "alice"); err != nil {
		t.Fatal(err)
	}
	if ok, from := savedState(t, d, "users/alice"); !ok || from != "s2" {
		t.Fatalf("alice's latest after forgetting s1: stored %v, from %q; want s2's", ok, from)
	}
	if c := runAs(t, cm, "s4", "alice", "fromS2"); resultOf(t, c) != float64(2) {
		t.Fatalf("a new session of alice: %s", c.JSON())
	}
}

// A cell running when its session is forgotten is aborted, and the session
// is not saved again by it.
func TestForgetSession_AbortsTheRunningCell(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openSQLite(t)
	g := newGate()
	cm := newCM(t, codemode.Config{Persist: true, DB: d, Tools: []tool.Tool{g.tool()}})
	runCell(t, cm, "s", "let x = 1")
	first := holdBusy(t, cm, g, "s")
	if err := cm.ForgetSession(ctx, "s", ""); err != nil {
		t.Fatal(err)
	}
	if c := <-first; c.Status != codemode.StatusAborted || c.Error.Reason != codemode.ReasonCancelled {
		t.Fatalf("running cell: %s", c.JSON())
	}
	if ok, _ := savedState(t, d, "sessions/s"); ok {
		t.Fatal("sessions/s is stored after the session was forgotten")
	}
	if c := runCell(t, cm, "s", "typeof x"); resultOf(t, c) != "undefined" {
		t.Fatalf("after forgetting: %s", c.JSON())
	}
}
