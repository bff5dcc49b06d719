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

// A retried run's last attempt ran on another replica: its job turned
// final (COMPLETED at attempt 2) a moment before that attempt's last batch
// reached the log. A client resuming from attempt 1's RunError in that
// window is streamed attempt 2's events to its RunCompleted, not a
// terminal built from the row in their place.
func TestResume_LastAttemptsBatchLandingAfterItsJobTurnedFinalIsStreamed(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	u, srv := streamServerTail(t, d, scripted.Reply("unused"), runlog.TailConfig{Poll: 20 * time.Millisecond, Grace: 5 * time.Second})
	ctx := context.Background()
	acc := accepted(t, postForm(t, u+"/agents/echo/runs", map[string]string{"message": "hi", "background": "true"}, nil))
	waitStatus(t, d, acc.RunID, run.StatusCompleted)
	waitJobFinal(t, srv, acc.RunID)
	l, err := srv.events.of(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite what the replicas left: attempt 1's events in the log, the
	// job final at attempt 2, whose events are still in flight.
	w := d.Driver().(db.SQLWriter).SQLWriter().DB
	if _, err := w.ExecContext(ctx, `DELETE FROM `+runlog.Table+` WHERE run_id = ?`, acc.RunID); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ExecContext(ctx, `UPDATE agno_jobs SET attempt = 2 WHERE id = ?`, acc.RunID); err != nil {
		t.Fatal(err)
	}
	ev := func(name run.EventType, content string) runlog.Pending {
		return runlog.Pending{Event: string(name), Data: []byte(`{"event":"` + string(name) + `","run_id":"` + acc.RunID + `","content":"` + content + `"}`), Final: run.IsTerminal(name)}
	}
	errAt := appendNext(t, l, acc.RunID, 1, ev(run.EventRunStarted, ""), ev(run.EventRunError, "attempt 1 failed")) + 1

	landed := make(chan struct{})
	go func() {
		defer close(landed)
		time.Sleep(300 * time.Millisecond)
		appendNext(t, l, acc.RunID, 2, ev(run.EventRunStarted, ""), ev(run.EventRunContent, "attempt 2's answer"), ev(run.EventRunCompleted, "attempt 2's answer"))
	}()
	req, _ := http.NewRequest(http.MethodGet, u+"/agents/echo/runs/"+acc.RunID+"/resume", nil)
	req.Header.Set("Last-Event-ID", strconv.FormatInt(errAt, 10))
	s := openStream(t, func() (*http.Response, error) { return http.DefaultClient.Do(req) })
	evs, _ := s.events(t, -1)
	<-landed
	checkIDs(t, evs, int(errAt)+1)
	if len(evs) != 3 || evs[2].event != string(run.EventRunCompleted) || !strings.Contains(evs[1].data, "attempt 2's answer") {
		t.Fatalf("the stream after attempt 1's RunError: %+v, want attempt 2's 3 events to its RunCompleted", evs)
	}
}

// waitJobFinal waits until the run's job is final.
func waitJobFinal(t *testing.T, srv *Server, runID string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		j, err := srv.queue.Get(context.Background(), runID, "", false)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != "queued" && j.Status != "running" {
			return
		}
	}
	t.Fatalf("job %s did not end", runID)
}
