package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// waitFinalEvent waits until the run's log holds its final event and the
// run is over for srv (a stream replays it), and returns that event's
// index.
func waitFinalEvent(t *testing.T, srv *Server, l *runlog.Log, runID string) int64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		last, ok, err := l.Last(context.Background(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if ok && last.Final {
			// The final event is written a moment before the run leaves
			// the server's registry (or its job turns final): until then
			// a stream still subscribes to the run instead of replaying it.
			end, _, err := srv.runEnd(context.Background(), l, runID)
			if err != nil {
				t.Fatal(err)
			}
			if end.Over {
				return last.Seq
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: no final event was recorded, or the run never ended", runID)
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
	final := waitFinalEvent(t, srv, l, acc.RunID)
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
	const runID = "run-paused"
	save := pausedRunInLog(t, d, srv, runID)
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

// pausedRunInLog saves run runID as PAUSED awaiting tool call "call-1"
// with a log of RunStarted and a final RunPaused for it (indexes 0 and 1),
// as a paused stream leaves it, and returns a save of the run's row with
// another status and content, awaiting the tool calls given (the run
// continued outside the log).
func pausedRunInLog(t *testing.T, d *db.DB, srv *Server, runID string) func(st run.Status, content string, awaiting ...string) {
	t.Helper()
	ctx := context.Background()
	save := func(st run.Status, content string, awaiting ...string) {
		t.Helper()
		row, err := db.RunFromOutput(&run.Output{RunID: runID, SessionID: "sess-" + runID, AgentID: "echo", Status: st, Content: content,
			Requirements: awaitingTools(awaiting...)})
		if err != nil {
			t.Fatal(err)
		}
		sess := &db.Session{SessionID: "sess-" + runID, SessionType: run.TypeAgent, AgentID: "echo"}
		if _, _, err := d.SaveRun(ctx, sess, row); err != nil {
			t.Fatal(err)
		}
	}
	save(run.StatusPaused, "", "call-1")
	l, err := srv.events.of(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := json.Marshal(awaitingTools("call-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, runID, 1, []runlog.Pending{
		{Event: "RunStarted", Data: []byte(`{"event":"RunStarted","run_id":"` + runID + `"}`)},
		{Event: "RunPaused", Data: []byte(`{"event":"RunPaused","run_id":"` + runID + `","requirements":` + string(reqs) + `}`), Final: true},
	}, nil); err != nil {
		t.Fatal(err)
	}
	return save
}

// A client reading a paused-then-continued run from the start gets the
// log's RunPaused and then the run's end built from the row: the RunPaused
// the stream sent is the log's last final event, but not the run's end
// (an Agno client would take the run for paused).
func TestResume_ContinuedPausedRunFromTheStartEndsWithTheRunsEnd(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	u, srv := streamServerTail(t, d, scripted.Reply("done"), runlog.TailConfig{Poll: 20 * time.Millisecond, Grace: 50 * time.Millisecond})
	const runID = "run-paused-from-start"
	save := pausedRunInLog(t, d, srv, runID)
	save(run.StatusCompleted, "the answer")
	fs := resumeFrames(t, u+"/agents/echo/runs/"+runID+"/resume", "-1")
	var got []string
	for _, f := range fs {
		got = append(got, f.event+"#"+f.id)
	}
	if len(fs) != 4 || fs[0].event != "replay" || fs[1].event != string(run.EventRunStarted) || fs[2].event != string(run.EventRunPaused) ||
		fs[3].event != string(run.EventRunCompleted) || fs[3].id != "2" || !strings.Contains(fs[3].data, "the answer") {
		t.Fatalf("frames %v, want replay, RunStarted, RunPaused, then RunCompleted#2 with the row's content", got)
	}
}

// gatedModel answers as ok once gate is closed: a run whose attempt
// executes, held in its model call.
type gatedModel struct {
	ok      *scripted.Model
	gate    chan struct{}
	entered chan struct{} // closed at the first call
	once    sync.Once
}

func newGatedModel(reply string) *gatedModel {
	return &gatedModel{ok: scripted.Reply(reply), gate: make(chan struct{}), entered: make(chan struct{})}
}

func (m *gatedModel) Info() model.Info { return m.ok.Info() }

func (m *gatedModel) wait(ctx context.Context) error {
	m.once.Do(func() { close(m.entered) })
	select {
	case <-m.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *gatedModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	return m.ok.Invoke(ctx, req)
}

func (m *gatedModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	if err := m.wait(ctx); err != nil {
		return func(yield func(*model.Chunk, error) bool) { yield(nil, err) }
	}
	return m.ok.Stream(ctx, req)
}

// saveRow stores the run's row with status st (the session is the
// agent "echo"'s).
func saveRow(t *testing.T, d *db.DB, runID, sessionID string, st run.Status, content string) {
	t.Helper()
	row, err := db.RunFromOutput(&run.Output{RunID: runID, SessionID: sessionID, AgentID: "echo", Status: st, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	sess := &db.Session{SessionID: sessionID, SessionType: run.TypeAgent, AgentID: "echo"}
	if _, _, err := d.SaveRun(context.Background(), sess, row); err != nil {
		t.Fatal(err)
	}
}

// appendNext stores evs after the log's last event and returns the seq of
// the first (the run's recorder may append at the same time).
func appendNext(t *testing.T, l *runlog.Log, runID string, attempt int, evs ...runlog.Pending) int64 {
	t.Helper()
	ctx := context.Background()
	for {
		var at int64
		last, ok, err := l.Last(ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			at = last.Seq + 1
		}
		switch err := l.AppendAt(ctx, runID, attempt, at, evs); {
		case err == nil:
			return at
		case !errors.Is(err, runlog.ErrSeqMoved):
			t.Fatal(err)
		}
	}
}

// A run whose row says ERROR while its job still runs (an attempt the
// queue retries stored ERROR and ended its events with RunError; the next
// attempt executes) is not over: an EventSource holding that RunError is
// not told 204 (which would stop it for good), it is streamed the next
// attempt's events to the run's real end.
func TestResume_FinalRowWithALiveJobIsFollowed(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	m := newGatedModel("second attempt's answer")
	u, srv := streamServer(t, d, m)
	acc := accepted(t, postForm(t, u+"/agents/echo/runs", map[string]string{"message": "hi", "background": "true"}, nil))
	<-m.entered // the job runs, held in its model call
	l, err := srv.events.of(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	// What the retried attempt left: its RunError in the log, ERROR on
	// the row.
	errAt := appendNext(t, l, acc.RunID, 1, runlog.Pending{Event: string(run.EventRunError),
		Data: []byte(`{"event":"RunError","run_id":"` + acc.RunID + `","content":"attempt 1 failed"}`), Final: true})
	saveRow(t, d, acc.RunID, acc.SessionID, run.StatusError, "attempt 1 failed")

	resume := u + "/agents/echo/runs/" + acc.RunID + "/resume"
	req, _ := http.NewRequest(http.MethodGet, resume, nil)
	req.Header.Set("Last-Event-ID", strconv.FormatInt(errAt, 10))
	s := openStream(t, func() (*http.Response, error) { return http.DefaultClient.Do(req) })
	close(m.gate) // the attempt goes on
	evs, meta := s.events(t, -1)
	if len(meta) != 1 || meta[0] != "subscribed" {
		t.Fatalf("meta frames %v, want subscribed (the run goes on)", meta)
	}
	checkIDs(t, evs, int(errAt)+1)
	if len(evs) == 0 || evs[len(evs)-1].event != string(run.EventRunCompleted) || !strings.Contains(evs[len(evs)-1].data, "second attempt's answer") {
		t.Fatalf("the stream after attempt 1's RunError: %+v, want the run's events to its RunCompleted", evs)
	}
	waitStatus(t, d, acc.RunID, run.StatusCompleted)
}

// A terminal event built from a finished run's row (its log ended without
// one) takes a seq of its own in the log: when the run's events go on
// later (a continuation, another attempt), a client reconnecting with
// that event's id gets every later event, the first included, instead of
// having it skipped as the one it already holds.
func TestResume_TerminalBuiltFromTheRowNeverNamesALaterEvent(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	// The run is no job and executes nowhere: its end is built from the
	// row once Grace passed.
	u, srv := streamServerTail(t, d, scripted.Reply("unused"), runlog.TailConfig{Poll: 20 * time.Millisecond, Grace: 50 * time.Millisecond})
	ctx := context.Background()
	const runID, sessionID = "run-cut", "sess-cut"
	l, err := srv.events.of(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	ev := func(name run.EventType, content string) runlog.Pending {
		return runlog.Pending{Event: string(name), Data: []byte(`{"event":"` + string(name) + `","run_id":"` + runID + `","content":"` + content + `"}`), Final: run.IsTerminal(name)}
	}
	// Attempt 1 died after two events; the row was finished without it.
	if err := l.Append(ctx, runID, 1, []runlog.Pending{ev(run.EventRunStarted, ""), ev(run.EventRunContent, "a")}, nil); err != nil {
		t.Fatal(err)
	}
	saveRow(t, d, runID, sessionID, run.StatusError, "cut")
	resume := u + "/agents/echo/runs/" + runID + "/resume"
	fs := resumeFrames(t, resume, "-1")
	if len(fs) != 4 || fs[3].event != string(run.EventRunError) || fs[3].id != "2" {
		t.Fatalf("first stream: %+v, want replay, 2 events and the RunError built from the row with id 2", fs)
	}
	built := fs[3].id

	// The run goes on: its next events are appended to the log.
	saveRow(t, d, runID, sessionID, run.StatusRunning, "")
	first := appendNext(t, l, runID, 2, ev(run.EventRunContinued, ""), ev(run.EventRunContent, "b"), ev(run.EventRunCompleted, "b"))
	saveRow(t, d, runID, sessionID, run.StatusCompleted, "b")

	fs = resumeFrames(t, resume, built)
	var evs []resumeFrame
	for _, f := range fs {
		if f.id != "" {
			evs = append(evs, f)
		}
	}
	checkIDs(t, evs, int(first))
	if len(evs) != 3 || evs[0].event != string(run.EventRunContinued) || evs[2].event != string(run.EventRunCompleted) {
		t.Fatalf("after the built terminal (id %s): %+v, want RunContinued, RunContent, RunCompleted", built, evs)
	}
	if res := get(t, resume, map[string]string{"Last-Event-ID": evs[2].id}); res.status != http.StatusNoContent {
		t.Fatalf("client holding the run's end: %d %q", res.status, res.body)
	}
}
