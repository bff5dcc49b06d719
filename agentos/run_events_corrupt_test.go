package agentos

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// corruptEvent overwrites the stored JSON of one event of a run's log
// with data, through the database's own connection (as a bad write, a
// manual edit or another program would leave it).
func corruptEvent(t *testing.T, d *db.DB, runID string, seq int64, data string) {
	t.Helper()
	wp := d.Driver().(db.SQLWriter).SQLWriter()
	table, q := runlog.Table, "UPDATE %s SET data = ? WHERE run_id = ? AND seq = ?"
	if wp.Dialect == "postgres" {
		table, q = `"`+wp.Schema+`"."`+runlog.Table+`"`, "UPDATE %s SET data = $1 WHERE run_id = $2 AND seq = $3"
	}
	res, err := wp.DB.ExecContext(context.Background(), strings.Replace(q, "%s", table, 1), data, runID, seq)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("corrupt event %d of run %s: %d rows", seq, runID, n)
	}
}

// A run's log holding events whose stored JSON cannot be read (cut off,
// not JSON at all, spread over lines) still streams to its end, every id
// in order and every frame one JSON object: an event stored over lines is
// sent on one; one that is not JSON is sent as a CustomEvent with its id
// (so that a client reconnecting with it moves past it) saying which
// event could not be read, and a warning is logged; the run's final event
// is sent as the run's row tells it. Ending the stream there instead (as
// it did, silently, or with an error frame) would leave an EventSource
// reconnecting to the same unreadable event for ever.
func TestResume_UnreadableStoredEventIsReplacedNotTheEnd(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *db.DB{"sqlite": testdbs.SQLite, "postgres": testdbs.Postgres, "mysql": testdbs.MySQL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply("the whole answer"), DB: d})
			if err != nil {
				t.Fatal(err)
			}
			var srv *Server
			ts, logs := testServer(t, Config{Agents: []*agent.Agent{a}}, func(s *Server) { srv, s.tailCfg = s, testTailConfig })
			acc := accepted(t, postForm(t, ts.URL+"/agents/echo/runs", map[string]string{"message": "hi", "background": "true"}, nil))
			waitStatus(t, d, acc.RunID, run.StatusCompleted)
			l, err := srv.events.of(context.Background(), d)
			if err != nil {
				t.Fatal(err)
			}
			final := waitFinalEvent(t, srv, l, acc.RunID)
			if final < 3 {
				t.Fatalf("the run stored %d events, want at least 4", final+1)
			}
			corruptEvent(t, d, acc.RunID, 0, "{\"event\":\"RunStarted\",\n\"run_id\":\""+acc.RunID+"\"}")
			corruptEvent(t, d, acc.RunID, 1, `{"event":"ModelRequestStarted","content":"cut off`)
			corruptEvent(t, d, acc.RunID, 2, `not json at all`)
			corruptEvent(t, d, acc.RunID, final, `{"event":"RunCompleted","content":"the whole`)

			resume := ts.URL + "/agents/echo/runs/" + acc.RunID + "/resume"
			s := openStream(t, func() (*http.Response, error) { return http.Get(resume) })
			evs, meta := s.events(t, -1)
			if len(meta) != 1 || meta[0] != "replay" {
				t.Fatalf("meta frames %v, want replay", meta)
			}
			checkIDs(t, evs, 0)
			if len(evs) != int(final)+1 {
				t.Fatalf("got %d events, want %d: %+v", len(evs), final+1, evs)
			}
			if evs[0].event != string(run.EventRunStarted) {
				t.Fatalf("event 0 (stored over two lines) = %+v", evs[0])
			}
			for i := 1; i <= 2; i++ {
				var ev struct {
					AgentID   string         `json:"agent_id"`
					RunID     string         `json:"run_id"`
					SessionID string         `json:"session_id"`
					Content   map[string]any `json:"content"`
				}
				if err := json.Unmarshal([]byte(evs[i].data), &ev); err != nil {
					t.Fatal(err)
				}
				if evs[i].event != string(run.EventCustom) || ev.AgentID != "echo" || ev.RunID != acc.RunID || ev.SessionID != acc.SessionID ||
					ev.Content["event_unreadable"] == "" || ev.Content["event_unreadable"] == nil {
					t.Fatalf("unreadable event %d sent as %+v", i, evs[i])
				}
			}
			last := evs[final]
			if last.event != string(run.EventRunCompleted) || !strings.Contains(last.data, `"content":"the whole answer"`) {
				t.Fatalf("unreadable final event sent as %+v, want the run's RunCompleted from its row", last)
			}
			for _, seq := range []string{"1", "2", strconv.FormatInt(final, 10)} {
				if !strings.Contains(logs.String(), `"seq":`+seq+`,`) {
					t.Fatalf("no warning for unreadable event %s in the log:\n%s", seq, logs)
				}
			}
			if strings.Contains(logs.String(), "cut off") {
				t.Fatalf("the unreadable event's content was logged:\n%s", logs)
			}
			// Reconnecting with an unreadable event's id moves past it;
			// with the final one's, nothing more.
			fs := resumeFrames(t, resume, "2")
			if len(fs) == 0 || fs[len(fs)-1].event != string(run.EventRunCompleted) || fs[1].id != "3" {
				t.Fatalf("resume after unreadable event 2: %+v", fs)
			}
			if res := get(t, resume, map[string]string{"Last-Event-ID": last.id}); res.status != http.StatusNoContent {
				t.Fatalf("resume after the final event: %d %q", res.status, res.body)
			}
		})
	}
}
