package agentos

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// waitFinalEvent waits until the run's log holds its final event and
// returns that event's index.
func waitFinalEvent(t *testing.T, l *runlog.Log, runID string) int64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		last, ok, err := l.Last(context.Background(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if ok && last.Final {
			return last.Seq
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: no final event was recorded", runID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An EventSource reconnects whenever its stream ends: once it holds the
// run's final event (its Last-Event-ID), the resume route answers 204,
// which makes it stop, instead of sending the final event again (built
// from the row, without an id) every few seconds for ever. Agno's POST
// gets the replay frame and no event.
func TestResume_ClientHoldingTheFinalEventGetsNothingMore(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	u, srv := streamServer(t, d, scripted.Reply("done"))
	acc := accepted(t, postForm(t, u+"/agents/echo/runs", map[string]string{"message": "hi", "background": "true"}, nil))
	waitStatus(t, d, acc.RunID, run.StatusCompleted)
	l, err := srv.events.of(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	final := waitFinalEvent(t, l, acc.RunID)
	resume := u + "/agents/echo/runs/" + acc.RunID + "/resume"

	// The first connection replays the run up to its final event...
	s := openStream(t, func() (*http.Response, error) { return http.Get(resume) })
	evs, _ := s.events(t, -1)
	checkIDs(t, evs, 0)
	if got := evs[len(evs)-1]; got.id != strconv.FormatInt(final, 10) || got.event != string(run.EventRunCompleted) {
		t.Fatalf("replay ended with %+v, want RunCompleted %d", got, final)
	}
	// ...and the EventSource's reconnection with its id gets 204.
	res := get(t, resume, map[string]string{"Last-Event-ID": evs[len(evs)-1].id})
	if res.status != http.StatusNoContent || res.body != "" {
		t.Fatalf("reconnect after the final event: %d %q", res.status, res.body)
	}
	res = postForm(t, resume, map[string]string{"last_event_index": strconv.FormatInt(final, 10)}, nil)
	if res.status != http.StatusOK || strings.Count(res.body, "event: ") != 1 || !strings.HasPrefix(res.body, "event: replay\n") {
		t.Fatalf("POST resume after the final event: %d %q", res.status, res.body)
	}
}

// resumeFrames reads a resume stream to its end.
func resumeFrames(t *testing.T, url string, lastID string) []resumeFrame {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Last-Event-ID", lastID)
	s := openStream(t, func() (*http.Response, error) { return http.DefaultClient.Do(req) })
	var fs []resumeFrame
	for {
		f, ok := s.next(t)
		if !ok {
			return fs
		}
		fs = append(fs, f)
	}
}

// A paused run whose log ends with RunPaused is over for a client holding
// that event while it stays paused; once continued (outside the log) and
// finished, the same client gets the run's end built from the row, with
// the next index as its id, and reconnecting with that id gets 204. An
// index past the log (never sent) is 400, finished or running.
func TestResume_ContinuedPausedRunEndsOnceWithAnID(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	// The run is no job and executes nowhere: its end is built from the
	// row once Grace passed.
	u, srv := streamServerTail(t, d, scripted.Reply("done"), runlog.TailConfig{Poll: 20 * time.Millisecond, Grace: 50 * time.Millisecond})
	ctx := context.Background()
	const runID, sessionID = "run-paused", "sess-paused"
	save := func(st run.Status, content string) {
		t.Helper()
		row, err := db.RunFromOutput(&run.Output{RunID: runID, SessionID: sessionID, AgentID: "echo", Status: st, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		sess := &db.Session{SessionID: sessionID, SessionType: run.TypeAgent, AgentID: "echo"}
		if _, _, err := d.SaveRun(ctx, sess, row); err != nil {
			t.Fatal(err)
		}
	}
	save(run.StatusPaused, "")
	l, err := srv.events.of(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, runID, 1, []runlog.Pending{
		{Event: "RunStarted", Data: []byte(`{"event":"RunStarted","run_id":"run-paused"}`)},
		{Event: "RunPaused", Data: []byte(`{"event":"RunPaused","run_id":"run-paused"}`), Final: true},
	}, nil); err != nil {
		t.Fatal(err)
	}
	resume := u + "/agents/echo/runs/" + runID + "/resume"
	if res := get(t, resume, map[string]string{"Last-Event-ID": "1"}); res.status != http.StatusNoContent {
		t.Fatalf("paused run, client holds RunPaused: %d %q", res.status, res.body)
	}
	for _, bad := range []string{"3", "99"} {
		res := get(t, resume, map[string]string{"Last-Event-ID": bad})
		if res.status != http.StatusBadRequest || !strings.Contains(res.detail(t), "never sent") {
			t.Fatalf("Last-Event-ID %s past the log: %d %q", bad, res.status, res.body)
		}
		res = postForm(t, resume, map[string]string{"last_event_index": bad}, nil)
		if res.status != http.StatusBadRequest {
			t.Fatalf("last_event_index %s past the log: %d %q", bad, res.status, res.body)
		}
	}

	// Continued in the foreground (its events are not in the log) and
	// completed.
	save(run.StatusRunning, "")
	if res := get(t, resume, map[string]string{"Last-Event-ID": "5"}); res.status != http.StatusBadRequest {
		t.Fatalf("running run, Last-Event-ID past the log: %d %q", res.status, res.body)
	}
	save(run.StatusCompleted, "the answer")
	fs := resumeFrames(t, resume, "1")
	if len(fs) != 2 || fs[0].event != "replay" || fs[1].event != string(run.EventRunCompleted) || fs[1].id != "2" ||
		!strings.Contains(fs[1].data, `"event_index":2`) || !strings.Contains(fs[1].data, "the answer") {
		t.Fatalf("continued run's end: %+v", fs)
	}
	if res := get(t, resume, map[string]string{"Last-Event-ID": "2"}); res.status != http.StatusNoContent {
		t.Fatalf("client holding the end built from the row: %d %q", res.status, res.body)
	}
}
