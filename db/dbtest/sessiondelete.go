package dbtest

import (
	"testing"

	"github.com/agentryhq/agentry/db"
)

// offloadedResult stores a tool result of a session the way offload does: the
// file in agno_fs, then its index row pointing at it.
func offloadedResult(t *testing.T, d *db.DB, id, session, user string) {
	t.Helper()
	ctx := bg
	if user != "" {
		ctx = db.WithUserScope(bg, user)
	}
	r := toolResult(id, session, user)
	r.Namespace = "agentfs/ns-" + session
	_, err := d.PutFile(bg, &db.File{Namespace: r.Namespace, Path: r.Path, Content: []byte("content of " + id)})
	noErr(t, err)
	noErr(t, d.UpsertToolResult(ctx, r))
}

// resultLeft reports whether a tool result's row and its file are still
// stored (read unscoped).
func resultLeft(t *testing.T, d *db.DB, id, session string) (row, file bool) {
	t.Helper()
	_, err := d.GetToolResult(bg, id)
	if err != nil {
		wantErr(t, err, db.ErrNotFound)
	}
	row = err == nil
	_, err = d.GetFile(bg, "agentfs/ns-"+session, "results/"+id)
	if err != nil {
		wantErr(t, err, db.ErrNotFound)
	}
	return row, err == nil
}

var sessionDeleteTests = map[string]func(t *testing.T, d *db.DB){
	"DeleteSessions_DeletesTheirToolResultsAndFiles": func(t *testing.T, d *db.DB) {
		seedRuns(t, d, "s1", 1)
		seedRuns(t, d, "s2", 1)
		offloadedResult(t, d, "res_1a", "s1", "")
		offloadedResult(t, d, "res_1b", "s1", "")
		offloadedResult(t, d, "res_2", "s2", "")
		// A file of the namespace that no index row names is not the
		// store's to judge: it stays.
		_, err := d.PutFile(bg, &db.File{Namespace: "agentfs/ns-s1", Path: "notes.txt", Content: []byte("x")})
		noErr(t, err)
		noErr(t, d.DeleteSessions(bg, "s1", "missing"))
		for _, id := range []string{"res_1a", "res_1b"} {
			row, file := resultLeft(t, d, id, "s1")
			equal(t, id+" index row left", row, false)
			equal(t, id+" file left", file, false)
		}
		row, file := resultLeft(t, d, "res_2", "s2")
		equal(t, "other session's row kept", row, true)
		equal(t, "other session's file kept", file, true)
		_, err = d.GetFile(bg, "agentfs/ns-s1", "notes.txt")
		noErr(t, err)
	},
	"DeleteSessions_LeavesAnotherUsersSessionAndItsResults": func(t *testing.T, d *db.DB) {
		alice, bob := db.WithUserScope(bg, "alice"), db.WithUserScope(bg, "bob")
		mustSession(t, alice, d, db.Session{SessionID: "sa"})
		mustSession(t, bob, d, db.Session{SessionID: "sb"})
		offloadedResult(t, d, "res_a", "sa", "alice")
		offloadedResult(t, d, "res_b", "sb", "bob")
		noErr(t, d.DeleteSessions(alice, "sa", "sb"))
		_, err := d.GetSession(bg, "sa")
		wantErr(t, err, db.ErrNotFound)
		row, file := resultLeft(t, d, "res_a", "sa")
		equal(t, "alice's row left", row, false)
		equal(t, "alice's file left", file, false)
		_, err = d.GetSession(bob, "sb")
		noErr(t, err)
		row, file = resultLeft(t, d, "res_b", "sb")
		equal(t, "bob's row kept", row, true)
		equal(t, "bob's file kept", file, true)
	},
	"DeleteSessions_DeletesTheirTracesAndSpans": func(t *testing.T, d *db.DB) {
		// Spans hold a run's input and output (input.value, output.value):
		// a deleted session's traces go with it.
		if !d.StoresTraces() {
			return // nothing stored, nothing to delete
		}
		alice := db.WithUserScope(bg, "alice")
		mustSession(t, alice, d, db.Session{SessionID: "s1"})
		mustSession(t, alice, d, db.Session{SessionID: "s2"})
		mustSession(t, db.WithUserScope(bg, "bob"), d, db.Session{SessionID: "sb"})
		for _, tr := range []struct{ id, user, session string }{
			{"t1a", "alice", "s1"}, {"t1b", "alice", "s1"}, {"t2", "alice", "s2"}, {"tb", "bob", "sb"}, {"tn", "", ""},
		} {
			noErr(t, d.WriteTraces(bg, []db.Trace{traceRow(tr.id, tr.user, tr.session, t0, 10)},
				[]db.Span{spanRow(tr.id, tr.id+"-root", "", "OK", t0), spanRow(tr.id, tr.id+"-child", tr.id+"-root", "OK", t0)}))
		}
		noErr(t, d.DeleteSessions(alice, "s1", "sb"))
		for id, kept := range map[string]bool{"t1a": false, "t1b": false, "t2": true, "tb": true, "tn": true} {
			_, err := d.GetTrace(bg, id, "")
			if kept {
				noErr(t, err)
			} else {
				wantErr(t, err, db.ErrNotFound)
			}
			spans, err := d.Spans(bg, id)
			noErr(t, err)
			want := 0
			if kept {
				want = 2
			}
			equal(t, id+" spans left", len(spans), want)
		}
	},
	"DeleteSessions_MissingSessionLeavesItsOrphanResults": func(t *testing.T, d *db.DB) {
		// Rows naming a session that is not stored (or not the caller's)
		// are not deleted through a session delete: only a deleted
		// session's results go with it.
		offloadedResult(t, d, "res_o", "ghost", "bob")
		noErr(t, d.DeleteSessions(db.WithUserScope(bg, "alice"), "ghost"))
		row, file := resultLeft(t, d, "res_o", "ghost")
		equal(t, "row kept", row, true)
		equal(t, "file kept", file, true)
	},
}
