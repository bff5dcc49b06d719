package dbtest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// atomicSave reports whether the driver writes SaveRun in one transaction;
// without the ability db.DB falls back to two writes and a refused run leaves
// the session written.
func atomicSave(d *db.DB) bool {
	_, ok := d.Driver().(db.RunSaver)
	return ok
}

func saveRun(t *testing.T, ctx context.Context, d *db.DB, s db.Session, r *db.Run) (*db.Session, *db.Run) {
	t.Helper()
	if s.SessionType == "" {
		s.SessionType = run.TypeAgent
	}
	gotS, gotR, err := d.SaveRun(ctx, &s, r)
	if err != nil {
		t.Fatalf("SaveRun(%s, %s): %v", s.SessionID, r.RunID, err)
	}
	return gotS, gotR
}

var saveRunTests = map[string]func(t *testing.T, d *db.DB){
	"SaveRun_WritesSessionAndRun": func(t *testing.T, d *db.DB) {
		s, r := saveRun(t, bg, d, db.Session{SessionID: "s1", AgentID: "agent-1", UserID: "u",
			SessionData: json.RawMessage(`{"session_state":{"n":1}}`)}, NewRun("s1", "a"))
		equal(t, "returned session", s.SessionID, "s1")
		equal(t, "returned session user", s.UserID, "u")
		if s.CreatedAt == 0 || s.UpdatedAt == 0 || r.CreatedAt == 0 || r.UpdatedAt == 0 {
			t.Fatalf("timestamps not set: session %d/%d, run %d/%d", s.CreatedAt, s.UpdatedAt, r.CreatedAt, r.UpdatedAt)
		}
		equal(t, "first run_index", *r.RunIndex, int64(0))
		gotS, err := d.GetSession(bg, "s1")
		noErr(t, err)
		equal(t, "stored agent", gotS.AgentID, "agent-1")
		jsonEqual(t, "stored session_data", gotS.SessionData, []byte(`{"session_state":{"n":1}}`))
		gotR, err := d.GetRun(bg, "a")
		noErr(t, err)
		equal(t, "stored run_index", *gotR.RunIndex, int64(0))

		// The next turn updates the session and appends a run.
		_, r = saveRun(t, bg, d, db.Session{SessionID: "s1", AgentID: "agent-1", UserID: "u",
			SessionData: json.RawMessage(`{"session_state":{"n":2}}`)}, NewRun("s1", "b"))
		equal(t, "second run_index", *r.RunIndex, int64(1))
		gotS, err = d.GetSession(bg, "s1")
		noErr(t, err)
		jsonEqual(t, "updated session_data", gotS.SessionData, []byte(`{"session_state":{"n":2}}`))
		equal(t, "created_at kept", gotS.CreatedAt, s.CreatedAt)

		// Saving a run again keeps its run_index.
		again := NewRun("s1", "a")
		again.Status = run.StatusError
		_, r = saveRun(t, bg, d, db.Session{SessionID: "s1", UserID: "u"}, again)
		equal(t, "updated run keeps run_index", *r.RunIndex, int64(0))
		gotR, err = d.GetRun(bg, "a")
		noErr(t, err)
		equal(t, "updated status", gotR.Status, run.StatusError)
	},
	"SaveRun_NilSessionStoresRunOnly": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s1"})
		s, r, err := d.SaveRun(bg, nil, NewRun("s1", "a"))
		noErr(t, err)
		if s != nil {
			t.Fatalf("session = %+v, want nil", s)
		}
		equal(t, "run_index", *r.RunIndex, int64(0))
	},
	"SaveRun_ScopedWritesAsCaller": func(t *testing.T, d *db.DB) {
		alice := db.WithUserScope(bg, "alice")
		s, r := saveRun(t, alice, d, db.Session{SessionID: "s1", UserID: "mallory"}, NewRun("s1", "a"))
		equal(t, "session user", s.UserID, "alice")
		equal(t, "run user", r.UserID, "alice")
		got, err := d.GetRun(alice, "a")
		noErr(t, err)
		equal(t, "stored run user", got.UserID, "alice")
	},
	"SaveRun_OtherUsersSessionWritesNothing": func(t *testing.T, d *db.DB) {
		alice, bob := db.WithUserScope(bg, "alice"), db.WithUserScope(bg, "bob")
		mustSession(t, alice, d, db.Session{SessionID: "s", SessionData: json.RawMessage(`{"session_name":"mine"}`)})
		_, _, err := d.SaveRun(bob, &db.Session{SessionID: "s", SessionType: run.TypeAgent,
			SessionData: json.RawMessage(`{"session_name":"stolen"}`)}, NewRun("s", "rb"))
		wantErr(t, err, db.ErrNotFound)
		_, err = d.GetRun(bg, "rb")
		wantErr(t, err, db.ErrNotFound)
		got, err := d.GetSession(bg, "s")
		noErr(t, err)
		equal(t, "owner", got.UserID, "alice")
		jsonEqual(t, "session_data", got.SessionData, []byte(`{"session_name":"mine"}`))
		// Unscoped, naming another owner is refused the same way.
		_, _, err = d.SaveRun(bg, &db.Session{SessionID: "s", SessionType: run.TypeAgent, UserID: "bob"}, NewRun("s", "rb"))
		wantErr(t, err, db.ErrNotFound)
		_, err = d.GetRun(bg, "rb")
		wantErr(t, err, db.ErrNotFound)
	},
	"SaveRun_OtherUsersRunWritesNothing": func(t *testing.T, d *db.DB) {
		alice, bob := db.WithUserScope(bg, "alice"), db.WithUserScope(bg, "bob")
		mustSession(t, alice, d, db.Session{SessionID: "sa"})
		mustRun(t, alice, d, NewRun("sa", "ra"))
		stolen := NewRun("sb", "ra")
		_, _, err := d.SaveRun(bob, &db.Session{SessionID: "sb", SessionType: run.TypeAgent}, stolen)
		if err == nil {
			t.Fatal("bob overwrote alice's run")
		}
		got, err := d.GetRun(alice, "ra")
		noErr(t, err)
		equal(t, "owner kept", got.UserID, "alice")
		equal(t, "session kept", got.SessionID, "sa")
		if atomicSave(d) {
			_, err = d.GetSession(bg, "sb")
			wantErr(t, err, db.ErrNotFound)
		}
	},
	"SaveRun_OtherUsersRunLeavesOwnSessionAsItWas": func(t *testing.T, d *db.DB) {
		alice, bob := db.WithUserScope(bg, "alice"), db.WithUserScope(bg, "bob")
		mustSession(t, alice, d, db.Session{SessionID: "sa"})
		mustRun(t, alice, d, NewRun("sa", "ra"))
		mustSession(t, bob, d, db.Session{SessionID: "sb", SessionData: json.RawMessage(`{"session_name":"before"}`)})
		_, _, err := d.SaveRun(bob, &db.Session{SessionID: "sb", SessionType: run.TypeAgent,
			SessionData: json.RawMessage(`{"session_name":"after"}`)}, NewRun("sb", "ra"))
		wantErr(t, err, db.ErrNotFound)
		got, err := d.GetRun(alice, "ra")
		noErr(t, err)
		equal(t, "session kept", got.SessionID, "sa")
		if atomicSave(d) {
			s, err := d.GetSession(bob, "sb")
			noErr(t, err)
			jsonEqual(t, "session_data", s.SessionData, []byte(`{"session_name":"before"}`))
		}
	},
	"SaveRun_RequiresFields": func(t *testing.T, d *db.DB) {
		sess := &db.Session{SessionID: "s1", SessionType: run.TypeAgent}
		for name, c := range map[string]struct {
			s *db.Session
			r *db.Run
		}{
			"session_id":         {&db.Session{SessionType: run.TypeAgent}, NewRun("s1", "r")},
			"session_type":       {&db.Session{SessionID: "s1"}, NewRun("s1", "r")},
			"run_id":             {sess, &db.Run{SessionID: "s1", RunType: run.TypeAgent, RunData: json.RawMessage(`{}`)}},
			"run_data":           {sess, &db.Run{RunID: "r", SessionID: "s1", RunType: run.TypeAgent}},
			"run in another one": {sess, NewRun("s2", "r")},
		} {
			if _, _, err := d.SaveRun(bg, c.s, c.r); err == nil {
				t.Fatalf("%s: SaveRun succeeded", name)
			} else {
				wantErr(t, err, db.ErrInvalidRecord)
			}
		}
		_, err := d.GetSession(bg, "s1")
		wantErr(t, err, db.ErrNotFound)
	},
	"SaveRun_ConcurrentWritersGetDistinctIndexes": func(t *testing.T, d *db.DB) {
		writeConcurrently(t, d, 6, 10, func(w, i int) error {
			s := &db.Session{SessionID: "s1", SessionType: run.TypeAgent}
			_, _, err := d.SaveRun(bg, s, NewRun("s1", fmt.Sprintf("w%d-%d", w, i)))
			return err
		})
	},
	// Saves that write the session and upserts that write the run alone, in
	// one session at once: the run_index both assign comes from one lock
	// (a save cannot rely on the session row's lock, which an upsert does
	// not take).
	"SaveRunAndUpsertRun_ConcurrentWritersGetDistinctIndexes": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s1", SessionType: run.TypeAgent})
		writeConcurrently(t, d, 8, 10, func(w, i int) error {
			r := NewRun("s1", fmt.Sprintf("w%d-%d", w, i))
			if w%2 == 0 {
				_, err := d.UpsertRun(bg, r)
				return err
			}
			_, _, err := d.SaveRun(bg, &db.Session{SessionID: "s1", SessionType: run.TypeAgent}, r)
			return err
		})
	},
}
