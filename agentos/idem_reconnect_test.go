package agentos

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
)

// A streamed background run answers with frames that carry ids, so a
// client whose connection dropped reconnects the way SSE clients do: the
// same request again (its Idempotency-Key names the run) with the id of
// the last event it received in Last-Event-ID. The stream it gets goes on
// after that event; it used to start again from the run's first event, so
// the client got every event it held a second time. A bad Last-Event-ID is
// 400 before anything is enqueued.
func TestBackgroundStream_RepeatedKeyResumesAfterLastEventID(t *testing.T) {
	t.Parallel()
	for _, durable := range []bool{true, false} {
		t.Run("durable="+strconv.FormatBool(durable), func(t *testing.T) {
			t.Parallel()
			d := testdbs.SQLite(t)
			var u string
			if durable {
				u, _ = streamServer(t, d, slowModel(30))
			} else {
				a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: slowModel(30), DB: d})
				if err != nil {
					t.Fatal(err)
				}
				var srv *Server
				ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}}, func(s *Server) { srv = s; s.tailCfg = testTailConfig })
				t.Cleanup(func() {
					srv.runs.stop(errServerShutdown)
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					srv.runs.wait(ctx)
				})
				u = ts.URL
			}
			key1 := uuid.NewString()
			fields := map[string]string{"message": "go", "background": "true", "stream": "true"}
			key := map[string]string{"Idempotency-Key": key1}
			s := openStream(t, func() (*http.Response, error) { return sendForm(u+"/agents/echo/runs", fields, key) })
			first, _ := s.events(t, 6)
			s.res.Body.Close()
			checkIDs(t, first, 0)

			again := map[string]string{"Idempotency-Key": key1, "Last-Event-ID": first[len(first)-1].id}
			rs := openStream(t, func() (*http.Response, error) { return sendForm(u+"/agents/echo/runs", fields, again) })
			rest, _ := rs.events(t, -1)
			if len(rest) == 0 {
				t.Fatal("the reconnection got no event")
			}
			checkIDs(t, rest, len(first))
			if last := rest[len(rest)-1]; last.event != string(run.EventRunCompleted) {
				t.Fatalf("reconnection ended with %+v", last)
			}
			bad := map[string]string{"Idempotency-Key": key1, "Last-Event-ID": "x"}
			if res := postForm(t, u+"/agents/echo/runs", fields, bad); res.status != http.StatusBadRequest {
				t.Fatalf("bad Last-Event-ID: %d %s", res.status, res.body)
			}
		})
	}
}
