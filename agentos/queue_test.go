package agentos

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// durableServer serves agent "echo" (model m) with the durable queue on a
// fresh SQLite database.
func durableServer(t *testing.T, m *scripted.Model, qc queue.Config, cfg Config) (string, *db.DB, *Server) {
	t.Helper()
	d := testdbs.SQLite(t)
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: m, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	if qc.PollInterval == 0 {
		qc.PollInterval = 20 * time.Millisecond
	}
	cfg.Agents, cfg.Queue = []*agent.Agent{a}, &qc
	var srv *Server
	ts, _ := testServer(t, cfg, func(s *Server) { srv = s })
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	return ts.URL, d, srv
}

func accepted(t *testing.T, res response) backgroundAccepted {
	t.Helper()
	if res.status != http.StatusAccepted {
		t.Fatalf("status %d: %s", res.status, res.body)
	}
	return decode[backgroundAccepted](t, res)
}

func waitStatus(t *testing.T, d *db.DB, runID string, want run.Status) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for storedStatus(d, runID) != want {
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s, want %s", runID, storedStatus(d, runID), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitJob waits until the job's status is want (the job is final a moment
// after its run row).
func waitJob(t *testing.T, u, id, want string, hdr map[string]string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		res := get(t, u+"/queue/jobs/"+id, hdr)
		if res.status == http.StatusOK && decode[queue.Job](t, res).Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: %d %s, want %s", id, res.status, res.body, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDurableQueue_BackgroundRunCompletesAndIsListed(t *testing.T) {
	t.Parallel()
	u, d, _ := durableServer(t, scripted.Reply("done"), queue.Config{}, Config{})
	acc := accepted(t, postForm(t, u+"/agents/echo/runs", map[string]string{"message": "hi", "background": "true"}, nil))
	if acc.Status != run.StatusPending || acc.SessionID == "" {
		t.Fatalf("%+v", acc)
	}
	waitStatus(t, d, acc.RunID, run.StatusCompleted)
	waitJob(t, u, acc.RunID, queue.StatusCompleted, nil)
	job := decode[queue.Job](t, get(t, u+"/queue/jobs/"+acc.RunID, nil))
	if job.Status != queue.StatusCompleted || job.Attempt != 1 || job.ComponentID != "echo" || job.SessionID != acc.SessionID {
		t.Fatalf("job %+v", job)
	}
	page := decode[paginated[queue.Job]](t, get(t, u+"/queue/jobs?status=completed&limit=5", nil))
	if page.Meta.TotalCount != 1 || len(page.Data) != 1 || page.Data[0].ID != acc.RunID {
		t.Fatalf("page %+v", page)
	}
	if res := get(t, u+"/queue/jobs?status=bogus", nil); res.status != http.StatusUnprocessableEntity {
		t.Fatalf("bad status filter: %d", res.status)
	}
	st := decode[queue.Stats](t, get(t, u+"/queue/stats", nil))
	if st.Completed != 1 || st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
	if res := get(t, u+"/queue/jobs/nope", nil); res.status != http.StatusNotFound {
		t.Fatalf("missing job: %d", res.status)
	}
}

// The session row a background run creates at enqueue holds the agent's
// data as the run itself writes it (agent.ComponentData), so a run that ends
// within that second, changing nothing else, leaves the row as it is.
func TestDurableQueue_EnqueuedSessionHoldsTheAgentsData(t *testing.T) {
	t.Parallel()
	slow := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{Content: "late"}}, Latency: time.Hour})
	u, d, srv := durableServer(t, slow, queue.Config{MaxConcurrency: 1}, Config{})
	acc := accepted(t, postForm(t, u+"/agents/echo/runs", map[string]string{"message": "hi", "background": "true"}, nil))
	s, err := d.GetSession(context.Background(), acc.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	a := srv.cfg.Agents[0]
	var got, want map[string]any
	if err := json.Unmarshal(s.AgentData, &got); err != nil {
		t.Fatalf("agent_data %s: %v", s.AgentData, err)
	}
	if err := json.Unmarshal(a.ComponentData(), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || got["agent_id"] != "echo" || s.AgentID != "echo" || s.SessionType != run.TypeAgent {
		t.Fatalf("enqueued session: type %s, agent %s, agent_data %s; want the agent's %s", s.SessionType, s.AgentID, s.AgentData, a.ComponentData())
	}
	res := do(t, http.MethodPost, u+"/agents/echo/runs/"+acc.RunID+"/cancel", nil, nil)
	if res.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", res.status, res.body)
	}
}

func TestDurableQueue_IdempotencyKeyAnswersTheFirstRun(t *testing.T) {
	t.Parallel()
	u, d, _ := durableServer(t, scripted.Reply("done"), queue.Config{}, Config{})
	fields := map[string]string{"message": "hi", "background": "true"}
	first := accepted(t, postForm(t, u+"/agents/echo/runs", fields, map[string]string{"Idempotency-Key": "k-1"}))
	waitStatus(t, d, first.RunID, run.StatusCompleted)
	again := accepted(t, postForm(t, u+"/agents/echo/runs", fields, map[string]string{"Idempotency-Key": "k-1"}))
	if again.RunID != first.RunID || again.Status != run.StatusCompleted {
		t.Fatalf("repeat answered %+v, first %+v", again, first)
	}
	if n := countRuns(t, d, db.RunFilter{Limit: 100, Page: 1}); n != 1 {
		t.Fatalf("%d runs stored", n)
	}
	long := strings.Repeat("k", 513)
	if res := postForm(t, u+"/agents/echo/runs", fields, map[string]string{"Idempotency-Key": long}); res.status != http.StatusUnprocessableEntity {
		t.Fatalf("513-char key: %d %s", res.status, res.body)
	}
}

// A repeated Idempotency-Key whose first run is deleted with its session
// between the enqueue's look at the key and the read of the run: the
// delete freed the key, so the request runs anew, as it would a moment
// later (it answered 404 for a key that it had just found taken).
func TestDurableQueue_RepeatedKeyOfARunDeletedMeanwhileRunsAnew(t *testing.T) {
	t.Parallel()
	u, d, srv := durableServer(t, scripted.Reply("done"), queue.Config{}, Config{})
	fields := map[string]string{"message": "hi", "background": "true"}
	key := map[string]string{"Idempotency-Key": "k-deleted-meanwhile"}
	first := accepted(t, postForm(t, u+"/agents/echo/runs", fields, key))
	waitStatus(t, d, first.RunID, run.StatusCompleted)
	var once sync.Once
	hook := func(runID string) {
		if runID != first.RunID {
			return // not the first run's repeat
		}
		once.Do(func() {
			if err := d.DeleteSessions(context.Background(), first.SessionID); err != nil {
				t.Error(err)
			}
		})
	}
	srv.afterRepeatedKey.Store(&hook)
	again := accepted(t, postForm(t, u+"/agents/echo/runs", fields, key))
	if again.RunID != first.RunID || again.Status != run.StatusPending || again.SessionID == first.SessionID {
		t.Fatalf("repeat answered %+v; want run %s anew (PENDING) in a new session", again, first.RunID)
	}
	waitStatus(t, d, again.RunID, run.StatusCompleted)
	if _, err := d.GetSession(context.Background(), again.SessionID); err != nil {
		t.Errorf("the new run's session: %v", err)
	}
}

// A key that names a run that no longer exists (deleted on its own: the
// key stays) is taken, and there is no run to answer with: 409 saying so,
// not 404 for a route that exists.
func TestDurableQueue_RepeatedKeyOfADeletedRunIsAConflict(t *testing.T) {
	t.Parallel()
	u, d, _ := durableServer(t, scripted.Reply("done"), queue.Config{}, Config{})
	fields := map[string]string{"message": "hi", "background": "true"}
	key := map[string]string{"Idempotency-Key": "k-run-deleted"}
	first := accepted(t, postForm(t, u+"/agents/echo/runs", fields, key))
	waitStatus(t, d, first.RunID, run.StatusCompleted)
	if err := d.DeleteRun(context.Background(), first.RunID); err != nil {
		t.Fatal(err)
	}
	res := postForm(t, u+"/agents/echo/runs", fields, key)
	if res.status != http.StatusConflict || !strings.Contains(res.body, first.RunID) {
		t.Fatalf("repeat of a deleted run's key: %d %s; want 409 naming run %s", res.status, res.body, first.RunID)
	}
}

func TestDurableQueue_429PastMaxQueueDepthAndCancel(t *testing.T) {
	t.Parallel()
	slow := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{Content: "late"}}, Latency: time.Hour})
	u, d, _ := durableServer(t, slow, queue.Config{MaxConcurrency: 1, MaxQueueDepth: 1}, Config{})
	fields := map[string]string{"message": "hi", "background": "true"}
	running := accepted(t, postForm(t, u+"/agents/echo/runs", fields, nil))
	waitStatus(t, d, running.RunID, run.StatusRunning)
	queued := accepted(t, postForm(t, u+"/agents/echo/runs", fields, nil))
	res := postForm(t, u+"/agents/echo/runs", fields, nil)
	if res.status != http.StatusTooManyRequests || !strings.Contains(res.detail(t), "queued") {
		t.Fatalf("past max_queue_depth: %d %s", res.status, res.body)
	}
	// The queued run is cancelled at once, without a slot.
	res = do(t, http.MethodPost, u+"/agents/echo/runs/"+queued.RunID+"/cancel", nil, nil)
	if res.status != http.StatusOK || decode[cancelResponse](t, res).Status != run.StatusCancelled {
		t.Fatalf("cancel queued: %d %s", res.status, res.body)
	}
	// The running one is stopped (its model call is cancelled) and answered
	// once stored CANCELLED.
	res = do(t, http.MethodPost, u+"/agents/echo/runs/"+running.RunID+"/cancel", nil, nil)
	if res.status != http.StatusOK || decode[cancelResponse](t, res).Status != run.StatusCancelled {
		t.Fatalf("cancel running: %d %s", res.status, res.body)
	}
	waitJob(t, u, running.RunID, queue.StatusCancelled, nil)
	st := decode[queue.Stats](t, get(t, u+"/queue/stats", nil))
	if st.Cancelled != 2 || st.Running != 0 || st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Past the cancellations there is room again.
	accepted(t, postForm(t, u+"/agents/echo/runs", fields, nil))
}

func TestDurableQueue_RoutesAreIsolatedPerUser(t *testing.T) {
	t.Parallel()
	authn := rsaAuthenticator(t)
	alice := bearer(rsToken(t, "alice"))
	bob := bearer(rsToken(t, "bob"))
	root := bearer(rsToken(t, "root", auth.AdminScope))
	u, d, _ := durableServer(t, scripted.Reply("done"), queue.Config{}, Config{UserIsolation: true, Auth: Auth{Authenticator: authn}})
	fields := map[string]string{"message": "hi", "background": "true"}
	body, hdr := form(fields)
	for k, v := range alice {
		hdr[k] = v
	}
	acc := accepted(t, do(t, http.MethodPost, u+"/agents/echo/runs", body, hdr))
	waitStatus(t, d, acc.RunID, run.StatusCompleted)
	waitJob(t, u, acc.RunID, queue.StatusCompleted, alice)

	if res := get(t, u+"/queue/jobs/"+acc.RunID, alice); res.status != http.StatusOK {
		t.Fatalf("owner: %d", res.status)
	}
	// The other user gets what a missing job gets (the id it sent echoed).
	if res := get(t, u+"/queue/jobs/"+acc.RunID, bob); res.status != http.StatusNotFound || strings.Contains(res.body, "echo") || strings.Contains(res.body, acc.SessionID) {
		t.Fatalf("other user reads alice's job: %d %s", res.status, res.body)
	}
	if res := get(t, u+"/queue/jobs", bob); res.status != http.StatusOK || strings.Contains(res.body, acc.RunID) {
		t.Fatalf("other user's list: %d %s", res.status, res.body)
	}
	if st := decode[queue.Stats](t, get(t, u+"/queue/stats", bob)); st.Completed != 0 {
		t.Fatalf("other user's stats count alice's job: %+v", st)
	}
	if st := decode[queue.Stats](t, get(t, u+"/queue/stats", alice)); st.Completed != 1 {
		t.Fatalf("owner's stats: %+v", st)
	}
	if res := get(t, u+"/queue/jobs", root); !strings.Contains(res.body, acc.RunID) {
		t.Fatalf("admin's list lacks alice's job: %s", res.body)
	}
	// Requeue is admin only; a completed job cannot be requeued.
	if res := do(t, http.MethodPost, u+"/queue/jobs/"+acc.RunID+"/requeue", nil, alice); res.status != http.StatusForbidden {
		t.Fatalf("requeue by a user: %d", res.status)
	}
	if res := do(t, http.MethodPost, u+"/queue/jobs/"+acc.RunID+"/requeue", nil, root); res.status != http.StatusConflict {
		t.Fatalf("requeue of a completed job: %d %s", res.status, res.body)
	}
	var detail map[string]any
	_ = json.Unmarshal([]byte(get(t, u+"/queue/jobs/"+acc.RunID, bob).body), &detail)
	if _, ok := detail["detail"]; !ok {
		t.Fatal("404 without detail")
	}
}

func TestDurableQueue_RefusedOnADatabaseWithoutIt(t *testing.T) {
	t.Parallel()
	d := db.New("mem", memory.New())
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply("hi"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Agents: []*agent.Agent{a}, Queue: &queue.Config{}})
	if err == nil || !strings.Contains(err.Error(), "sqlite or postgres") {
		t.Fatalf("durable queue on the memory driver: %v", err)
	}
}

func TestInProcessRunner_HonoursConfiguredBoundsWith429(t *testing.T) {
	t.Parallel()
	slow := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{Content: "late"}}, Latency: time.Hour})
	d := db.New("mem", memory.New())
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: slow, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}, BackgroundConcurrency: 1, BackgroundQueueDepth: 1, ShutdownTimeout: time.Millisecond}, nil)
	fields := map[string]string{"message": "hi", "background": "true"}
	first := accepted(t, postForm(t, ts.URL+"/agents/echo/runs", fields, nil))
	waitStatus(t, d, first.RunID, run.StatusRunning)
	second := accepted(t, postForm(t, ts.URL+"/agents/echo/runs", fields, nil))
	if res := postForm(t, ts.URL+"/agents/echo/runs", fields, nil); res.status != http.StatusTooManyRequests {
		t.Fatalf("past the configured depth: %d %s", res.status, res.body)
	}
	for _, id := range []string{second.RunID, first.RunID} {
		do(t, http.MethodPost, ts.URL+"/agents/echo/runs/"+id+"/cancel", nil, nil)
	}
}

// A durable background run of an agent without a database is refused with
// 422, as the in-process runner refuses it, never reaching the store.
func TestDurableQueue_AgentWithoutADatabaseIs400(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	withDB, err := agent.New(agent.Config{ID: "echo", Model: scripted.Reply("done"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	noDB, err := agent.New(agent.Config{ID: "loner", Model: scripted.Reply("done")})
	if err != nil {
		t.Fatal(err)
	}
	var srv *Server
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{withDB, noDB}, Queue: &queue.Config{PollInterval: 20 * time.Millisecond}}, func(s *Server) { srv = s })
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	res := postForm(t, ts.URL+"/agents/loner/runs", map[string]string{"message": "hi", "background": "true"}, nil)
	if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), "database") {
		t.Fatalf("status %d: %s", res.status, res.body)
	}
}
