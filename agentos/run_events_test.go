package agentos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// resumeFrame is one frame of an event stream.
type resumeFrame struct {
	id    string // "" when the frame has none
	event string
	data  string
}

// resumeStream reads frames off a streamed response.
type resumeStream struct {
	res *http.Response
	r   *bufio.Reader
}

func openStream(t *testing.T, send func() (*http.Response, error)) *resumeStream {
	t.Helper()
	res, err := send()
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		var b strings.Builder
		bufio.NewReader(res.Body).WriteTo(&b)
		res.Body.Close()
		t.Fatalf("status %d (%s): %s", res.StatusCode, res.Header.Get("Content-Type"), b.String())
	}
	t.Cleanup(func() { res.Body.Close() })
	return &resumeStream{res: res, r: bufio.NewReader(res.Body)}
}

// next returns the next frame (comments skipped); ok is false at the end.
func (s *resumeStream) next(t *testing.T) (f resumeFrame, ok bool) {
	t.Helper()
	got := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if got {
				t.Fatalf("stream ended inside a frame: %+v", f)
			}
			return f, false
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if got {
				return f, true
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			f.id, got = line[4:], true
		case strings.HasPrefix(line, "event: "):
			f.event, got = line[7:], true
		case strings.HasPrefix(line, "data: "):
			f.data, got = line[6:], true
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
}

// events reads frames with an id until n were read (n < 0: to the end);
// frames without an id (replay, subscribed) are skipped and counted.
func (s *resumeStream) events(t *testing.T, n int) (evs []resumeFrame, meta []string) {
	t.Helper()
	for n < 0 || len(evs) < n {
		f, ok := s.next(t)
		if !ok {
			break
		}
		if f.id == "" {
			meta = append(meta, f.event)
			continue
		}
		evs = append(evs, f)
	}
	return evs, meta
}

// checkIDs asserts the frames' ids run from first without gap, and that
// each frame's event_index is its id.
func checkIDs(t *testing.T, evs []resumeFrame, first int) {
	t.Helper()
	for i, f := range evs {
		want := strconv.Itoa(first + i)
		if f.id != want {
			t.Fatalf("frame %d has id %s, want %s (%+v)", i, f.id, want, f)
		}
		var d struct {
			EventIndex *int   `json:"event_index"`
			Event      string `json:"event"`
		}
		if err := json.Unmarshal([]byte(f.data), &d); err != nil || d.EventIndex == nil || strconv.Itoa(*d.EventIndex) != f.id || d.Event != f.event {
			t.Fatalf("frame %+v: data %+v (%v)", f, d, err)
		}
	}
}

// slowModel streams its answer word by word, slowly enough to reconnect in
// the middle.
func slowModel(words int) *scripted.Model {
	var b strings.Builder
	for i := range words {
		fmt.Fprintf(&b, "w%d ", i)
	}
	return scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{Content: b.String()}}, ChunkLatency: 15 * time.Millisecond})
}

// streamServer serves agent "echo" on d with the durable queue.
func streamServer(t *testing.T, d *db.DB, m model.Model) (string, *Server) {
	t.Helper()
	return streamServerTail(t, d, m, testTailConfig)
}

// streamServerTail is streamServer whose resume streams tail with cfg.
func streamServerTail(t *testing.T, d *db.DB, m model.Model, cfg runlog.TailConfig) (string, *Server) {
	t.Helper()
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: m, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	qc := queue.Config{PollInterval: 20 * time.Millisecond, LockGrace: 2 * time.Second}
	var srv *Server
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}, Queue: &qc}, func(s *Server) {
		srv = s
		s.tailCfg = cfg
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	return ts.URL, srv
}

// testTailConfig is the resume streams' tail in these tests. Grace bounds
// only the wait for a producer that died between its run's final row and
// its final event batch; a live producer's last batch lands after the row
// too, and on a loaded CI machine (load average 30 on 2 cores) that took
// more than 300 ms: the stream then ended with a terminal event made from
// the row instead of the stored one, and the test saw no RunCompleted
// with an id. No test here waits for the Grace to pass.
var testTailConfig = runlog.TailConfig{Poll: 20 * time.Millisecond, Grace: 10 * time.Second}

// reconnectMidRun streams a background run from a, drops the connection
// after 8 events, resumes it on b with Last-Event-ID, and checks the two
// parts are the whole run with no gap and no duplicate, ending in
// RunCompleted; then a replay of the finished run from the middle.
func reconnectMidRun(t *testing.T, a, b string) {
	t.Helper()
	s := openStream(t, func() (*http.Response, error) {
		return sendForm(a+"/agents/echo/runs", map[string]string{"message": "go", "background": "true", "stream": "true"}, nil)
	})
	first, meta := s.events(t, 8)
	s.res.Body.Close()
	checkIDs(t, first, 0)
	if len(meta) != 1 || meta[0] != "subscribed" || first[0].event != string(run.EventRunStarted) {
		t.Fatalf("stream began with %v then %+v", meta, first[0])
	}
	var ev run.Event
	if err := json.Unmarshal([]byte(first[0].data), &ev); err != nil || ev.RunID == "" {
		t.Fatalf("first event %s", first[0].data)
	}
	runID := ev.RunID
	req, _ := http.NewRequest(http.MethodGet, b+"/agents/echo/runs/"+runID+"/resume", nil)
	req.Header.Set("Last-Event-ID", first[len(first)-1].id)
	rs := openStream(t, func() (*http.Response, error) { return http.DefaultClient.Do(req) })
	rest, _ := rs.events(t, -1)
	checkIDs(t, rest, len(first))
	if last := rest[len(rest)-1]; last.event != string(run.EventRunCompleted) {
		t.Fatalf("resumed stream ended with %+v", last)
	}
	var content strings.Builder
	for _, f := range append(first, rest...) {
		var e run.Event
		json.Unmarshal([]byte(f.data), &e)
		if e.Event == run.EventRunContent {
			content.WriteString(fmt.Sprint(e.Content))
		}
	}
	if !strings.HasPrefix(content.String(), "w0 w1 w2") || !strings.Contains(content.String(), "w29") {
		t.Fatalf("content deltas joined: %q", content.String())
	}
	// The finished run replays from the middle (Agno's form field).
	all := len(first) + len(rest)
	rp := openStream(t, func() (*http.Response, error) {
		return sendForm(b+"/agents/echo/runs/"+runID+"/resume", map[string]string{"last_event_index": strconv.Itoa(all - 4)}, nil)
	})
	// Agno's replay frame counts and says what it replays.
	f, _ := rp.next(t)
	var rf struct {
		Event       string `json:"event"`
		TotalEvents *int   `json:"total_events"`
		Buffered    int    `json:"total_buffered"`
		Message     string `json:"message"`
	}
	if err := json.Unmarshal([]byte(f.data), &rf); err != nil || f.event != "replay" || rf.Event != "replay" || rf.TotalEvents == nil || *rf.TotalEvents != 3 ||
		rf.Buffered != all || rf.Message != fmt.Sprintf("Run COMPLETED. Replaying 3 missed events (of %d total).", all) {
		t.Fatalf("replay frame %+v: %s (%v)", f, f.data, err)
	}
	tail, meta := rp.events(t, -1)
	checkIDs(t, tail, all-3)
	if len(tail) != 3 || len(meta) != 0 {
		t.Fatalf("replay of the last 3: %d events, meta %v", len(tail), meta)
	}
}

func TestResume_ReconnectMidRunWithLastEventID_SQLite(t *testing.T) {
	t.Parallel()
	u, _ := streamServer(t, testdbs.SQLite(t), slowModel(30))
	reconnectMidRun(t, u, u)
}

// Two servers on one Postgres database: the run executes on whichever
// claims it, the client streams it from A and resumes on B.
func TestResume_ReconnectOnAnotherReplica_Postgres(t *testing.T) {
	t.Parallel()
	da, dbb := testdbs.AllTwins["postgres"](t)
	a, _ := streamServer(t, da, slowModel(30))
	b, _ := streamServer(t, dbb, slowModel(30))
	reconnectMidRun(t, a, b)
	reconnectMidRun(t, b, a)
}

func TestResume_BadLastEventIDIsRefused(t *testing.T) {
	t.Parallel()
	u, _ := streamServer(t, testdbs.SQLite(t), scripted.Reply("done"))
	acc := accepted(t, postForm(t, u+"/agents/echo/runs", map[string]string{"message": "hi", "background": "true"}, nil))
	resume := u + "/agents/echo/runs/" + acc.RunID + "/resume"
	for _, bad := range []string{"abc", "-2", "1.5", "3 4", "+1", "01", "99999999999999999999", "1e3", "0x10"} {
		res := get(t, resume, map[string]string{"Last-Event-ID": bad})
		if res.status != http.StatusBadRequest || !strings.Contains(res.detail(t), "Last-Event-ID") {
			t.Errorf("Last-Event-ID %q: %d %s", bad, res.status, res.body)
		}
	}
	if res := postForm(t, resume, map[string]string{"last_event_index": "x"}, nil); res.status != http.StatusBadRequest || !strings.Contains(res.detail(t), "last_event_index") {
		t.Errorf("bad last_event_index: %d %s", res.status, res.body)
	}
	if res := postForm(t, resume, map[string]string{"last_event_index": "2"}, map[string]string{"Last-Event-ID": "3"}); res.status != http.StatusBadRequest {
		t.Errorf("disagreeing indexes: %d %s", res.status, res.body)
	}
	if res := get(t, u+"/agents/echo/runs/nope/resume", nil); res.status != http.StatusNotFound {
		t.Errorf("missing run: %d %s", res.status, res.body)
	}
}

// A stream of a finished run whose log was deleted by retention replays
// the events stored on its row.
func TestResume_FinishedRunWithoutLogReplaysTheRow(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	u, srv := streamServer(t, d, scripted.Reply("done"))
	acc := accepted(t, postForm(t, u+"/agents/echo/runs", map[string]string{"message": "hi", "background": "true"}, nil))
	waitStatus(t, d, acc.RunID, run.StatusCompleted)
	l, err := srv.events.of(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the log to hold the final event, then let retention delete it.
	deadline := time.Now().Add(30 * time.Second)
	stored := func() bool {
		recs, _ := l.Read(context.Background(), acc.RunID, -1, 1000)
		return len(recs) > 0 && recs[len(recs)-1].Final
	}
	for !stored() {
		if time.Now().After(deadline) {
			t.Fatal("no events were recorded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n, err := l.DeleteBefore(context.Background(), time.Now().Unix()+1, 0); err != nil || n == 0 {
		t.Fatalf("retention deleted %d (%v)", n, err)
	}
	s := openStream(t, func() (*http.Response, error) { return sendForm(u+"/agents/echo/runs/"+acc.RunID+"/resume", nil, nil) })
	evs, meta := s.events(t, -1)
	if len(meta) != 1 || meta[0] != "replay" {
		t.Fatalf("meta %v", meta)
	}
	row, _ := d.GetRun(context.Background(), acc.RunID)
	out, _ := row.Output()
	if len(evs) != len(out.Events) {
		t.Fatalf("replayed %d events, the row holds %d", len(evs), len(out.Events))
	}
	checkIDs(t, evs, 0)
	// An EventSource reconnecting with the last one (or one the log gave
	// before retention: any at or past it) is told to stop.
	last := strconv.Itoa(max(len(out.Events)-1, 0))
	if res := get(t, u+"/agents/echo/runs/"+acc.RunID+"/resume", map[string]string{"Last-Event-ID": last}); res.status != http.StatusNoContent {
		t.Fatalf("reconnect after the row's last event: %d %q", res.status, res.body)
	}
}

// Teams' and workflows' background runs stream their own events too, from
// their start event to their terminal one.
func TestResume_BackgroundTeamAndWorkflowStream(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	echo, squad, flow := echoSquadFlow(t, d, "hello")
	qc := queue.Config{PollInterval: 20 * time.Millisecond, LockGrace: 2 * time.Second}
	var srv *Server
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{echo}, Teams: []*team.Team{squad}, Workflows: []*workflow.Workflow{flow}, Queue: &qc}, func(s *Server) {
		srv = s
		s.tailCfg = testTailConfig
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	for _, c := range []struct{ path, start, end string }{
		{"/teams/squad", "TeamRunStarted", "TeamRunCompleted"},
		{"/workflows/flow", "WorkflowStarted", "WorkflowCompleted"},
	} {
		s := openStream(t, func() (*http.Response, error) {
			return sendForm(ts.URL+c.path+"/runs", map[string]string{"message": "go", "background": "true", "stream": "true"}, nil)
		})
		// The first frame is Agno's subscribed frame, naming the kind
		// (or its replay frame, when the run ended before the stream
		// read the log).
		f, _ := s.next(t)
		kind := strings.TrimSuffix(strings.Split(c.path, "/")[1], "s")
		switch want := "Subscribed to " + kind + " run. Receiving live events."; f.event {
		case "subscribed":
			if !strings.Contains(f.data, `"message":"`+want+`"`) {
				t.Errorf("%s: subscribed frame %+v, want it saying %q", c.path, f, want)
			}
		case "replay":
			if !strings.Contains(f.data, `"message":"Run COMPLETED. Replaying `) {
				t.Errorf("%s: replay frame %+v", c.path, f)
			}
		default:
			t.Errorf("%s: first frame %+v, want subscribed or replay", c.path, f)
		}
		evs, _ := s.events(t, -1)
		checkIDs(t, evs, 0)
		if len(evs) < 2 || evs[0].event != c.start || evs[len(evs)-1].event != c.end {
			names := []string{}
			for _, f := range evs {
				names = append(names, f.event)
			}
			t.Errorf("%s: background stream %v", c.path, names)
		}
	}
}

// The resume form takes last_event_index and session_id (Agno's); uploaded
// files and other fields are refused, not dropped.
func TestResume_FormRefusesFilesAndOtherFields(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	u, _ := streamServer(t, d, scripted.Reply("done"))
	acc := accepted(t, postForm(t, u+"/agents/echo/runs", map[string]string{"message": "hi", "background": "true"}, nil))
	waitStatus(t, d, acc.RunID, run.StatusCompleted)
	resume := u + "/agents/echo/runs/" + acc.RunID + "/resume"
	if res := postForm(t, resume, map[string]string{"last_event_index": "0", "message": "more"}, nil); res.status != http.StatusUnprocessableEntity || !strings.Contains(res.detail(t), `"message"`) {
		t.Errorf("extra field: %d %s", res.status, res.body)
	}
	ct, body := multipartBody(t, formPart{name: "session_id", value: acc.SessionID}, formPart{name: "files", filename: "a.txt", value: "x"})
	if res := do(t, http.MethodPost, resume, bytes.NewReader(body), map[string]string{"Content-Type": ct}); res.status != http.StatusUnprocessableEntity || !strings.Contains(res.detail(t), "files") {
		t.Errorf("file: %d %s", res.status, res.body)
	}
	if res := postForm(t, resume, map[string]string{"last_event_index": "0", "session_id": acc.SessionID}, nil); res.status != http.StatusOK {
		t.Errorf("resume form: %d %s", res.status, res.body)
	}
}

// An EventSource opened on a resume URL carrying last_event_index (where
// the stream starts) sends Last-Event-ID at each reconnection, with the
// same URL: the header, the event it received last, supersedes the URL's
// index instead of the two "disagreeing" (400, which stops the
// EventSource for good). A form field (Agno's POST) and the header still
// must agree.
func TestResume_LastEventIDSupersedesTheURLsIndex(t *testing.T) {
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
	fs := resumeFrames(t, resume+"?last_event_index=-1", "0")
	var evs []resumeFrame
	for _, f := range fs {
		if f.id != "" {
			evs = append(evs, f)
		}
	}
	checkIDs(t, evs, 1)
	if len(evs) != int(final) {
		t.Fatalf("reconnection after event 0: %d events, want 1 to %d", len(evs), final)
	}
	if res := get(t, resume+"?last_event_index=-1", map[string]string{"Last-Event-ID": strconv.FormatInt(final, 10)}); res.status != http.StatusNoContent {
		t.Fatalf("reconnection holding the final event: %d %q", res.status, res.body)
	}
	if res := postForm(t, resume, map[string]string{"last_event_index": "0"}, map[string]string{"Last-Event-ID": "1"}); res.status != http.StatusBadRequest {
		t.Fatalf("form field and header disagreeing: %d %q", res.status, res.body)
	}
}
