package dbtest

import (
	"context"
	"encoding/json"
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
	"DeleteSessions_DeletesTheirRunsJournals": func(t *testing.T, d *db.DB) {
		// A run that paused, failed or crashed keeps its step journal: the
		// model requests and results and the tool results of the run.
		seedRuns(t, d, "s1", 2)
		seedRuns(t, d, "s2", 1)
		j := mustJournal(t, d)
		res := func(context.Context) (json.RawMessage, error) { return json.RawMessage(`{"answer":"secret"}`), nil }
		for _, r := range []string{"s1-r0", "s1-r1", "s2-r0"} {
			_, err := j.Do(bg, step(r, "model:0", 1, true), res)
			noErr(t, err)
		}
		// A step started and never finished, and a fence raised by a
		// later attempt.
		_, err := j.Do(bg, step("s1-r1", "tool:c1", 1, false), func(context.Context) (json.RawMessage, error) { return nil, context.Canceled })
		wantErr(t, err, context.Canceled)
		noErr(t, j.Fence(bg, "s1-r0", 3))
		noErr(t, d.DeleteSessions(bg, "s1"))
		for _, r := range []string{"s1-r0", "s1-r1"} {
			steps, err := j.Steps(bg, r)
			noErr(t, err)
			equal(t, r+" steps left", len(steps), 0)
		}
		steps, err := j.Steps(bg, "s2-r0")
		noErr(t, err)
		equal(t, "other session's steps", len(steps), 1)
		// The fence went too: a run stored again under that id (a
		// repeated request) journals from attempt 1.
		noErr(t, j.Fence(bg, "s1-r0", 1))
	},
	"DeleteSessions_DeletesTheirRunsApprovals": func(t *testing.T, d *db.DB) {
		// Approvals hold the paused tool call's arguments.
		seedRuns(t, d, "s1", 2)
		seedRuns(t, d, "s2", 1)
		bob := db.WithUserScope(bg, "bob")
		mustSession(t, bob, d, db.Session{SessionID: "sb"})
		mustRun(t, bob, d, NewRun("sb", "sb-r0"))
		add := func(id, runID, session, user string) {
			a := approval(id, runID, user, 100)
			a.SessionID, a.ToolName, a.ToolArgs = session, "transfer", json.RawMessage(`{"iban":"secret"}`)
			noErr(t, d.CreateApproval(bg, a))
		}
		add("ap_session", "s1-r0", "s1", "")
		add("ap_run", "s1-r1", "elsewhere", "") // a run of s1 named under another session id
		add("ap_other", "s2-r0", "s2", "")
		add("ap_bob", "sb-r0", "sb", "bob")
		noErr(t, d.DeleteSessions(bg, "s1"))
		noErr(t, d.DeleteSessions(db.WithUserScope(bg, "alice"), "sb"))
		for id, kept := range map[string]bool{"ap_session": false, "ap_run": false, "ap_other": true, "ap_bob": true} {
			_, err := d.GetApproval(bg, id)
			if kept {
				noErr(t, err)
			} else {
				wantErr(t, err, db.ErrNotFound)
			}
		}
	},
	"DeleteSessions_ScheduleRunsKeepTheirHistoryWithoutTheSession": func(t *testing.T, d *db.DB) {
		// A schedule run names its run and session and copies the run's
		// input and output: the row stays (Agno's schedule history) without
		// them; one still running or paused is failed, since nothing would
		// end it.
		seedRuns(t, d, "s1", 3)
		seedRuns(t, d, "s2", 1)
		_, err := d.CreateSchedule(bg, schedule("sch", "nightly", "", 10))
		noErr(t, err)
		add := func(id, status, runID, session string) {
			r := &db.ScheduleRun{ID: id, ScheduleID: "sch", TriggeredAt: 60, Status: status, RunID: runID, SessionID: session,
				Input: json.RawMessage(`{"message":"hi"}`), CreatedAt: 61}
			if status != db.ScheduleRunRunning {
				r.CompletedAt, r.Output = 70, json.RawMessage(`{"content":"secret"}`)
			}
			if status == db.ScheduleRunPaused {
				r.Requirements = json.RawMessage(`[{"tool_args":{"iban":"secret"}}]`)
			}
			_, err := d.CreateScheduleRun(bg, r)
			noErr(t, err)
		}
		add("sr_done", db.ScheduleRunSuccess, "s1-r0", "s1")
		add("sr_live", db.ScheduleRunRunning, "s1-r1", "s1")
		add("sr_paused", db.ScheduleRunPaused, "s1-r2", "")
		add("sr_other", db.ScheduleRunSuccess, "s2-r0", "s2")
		noErr(t, d.DeleteSessions(bg, "s1"))
		for id, want := range map[string]string{"sr_done": db.ScheduleRunSuccess, "sr_live": db.ScheduleRunFailed, "sr_paused": db.ScheduleRunFailed} {
			got, err := d.GetScheduleRun(bg, id)
			noErr(t, err)
			equal(t, id+" status", got.Status, want)
			equal(t, id+" run and session", [2]string{got.RunID, got.SessionID}, [2]string{})
			equal(t, id+" input, output, requirements", [3]int{len(got.Input), len(got.Output), len(got.Requirements)}, [3]int{})
			if got.CompletedAt == 0 {
				t.Errorf("%s: completed_at not set", id)
			}
			if want == db.ScheduleRunFailed {
				equal(t, id+" error", got.Error, db.ScheduleRunSessionDeleted)
			}
		}
		// The scheduler's late outcome of the running one (read before the
		// delete) writes nothing back.
		done, err := d.FinishScheduleRun(bg, &db.ScheduleRun{ID: "sr_live", Status: db.ScheduleRunSuccess, CompletedAt: 80,
			Output: json.RawMessage(`{"content":"secret"}`)})
		noErr(t, err)
		equal(t, "late finish applied", done, false)
		other, err := d.GetScheduleRun(bg, "sr_other")
		noErr(t, err)
		equal(t, "other run and session", [2]string{other.RunID, other.SessionID}, [2]string{"s2-r0", "s2"})
		if len(other.Output) == 0 || other.Status != db.ScheduleRunSuccess {
			t.Errorf("another session's schedule run changed: %+v", other)
		}
		list, total, err := d.ListScheduleRuns(bg, db.ScheduleRunFilter{ScheduleID: "sch", Limit: 10, Page: 1})
		noErr(t, err)
		equal(t, "schedule runs listed", [2]int{len(list), total}, [2]int{4, 4})
	},
}
