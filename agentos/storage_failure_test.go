package agentos

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/internal/faultproxy"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/workflow"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver for the schema cleanup
)

// pgTestDSN is the Postgres the storage-failure tests run against (a
// loopback service; they fail when it is down).
func pgTestDSN() string {
	if dsn := os.Getenv("AGENTRY_TEST_POSTGRES_DSN"); dsn != "" {
		return dsn
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// outageQueryTimeout is the query timeout of the proxied database. It bounds
// how long a stalled query waits, and must stay far above what a healthy
// query takes on a loaded 2-core machine (at 400 ms a healthy run's first
// store timed out under load average ~28).
const outageQueryTimeout = 2 * time.Second

// outageFixture serves an agent, a team and a workflow on a Postgres
// database reached through a fault proxy. Each target's run calls the tool
// cut_db, which cuts the database connection when armed, so the run starts
// normally and fails to be stored.
type outageFixture struct {
	url   string
	db    *db.DB
	proxy *faultproxy.Proxy
	logs  *syncBuffer
	armed atomic.Bool
}

func newOutageFixture(t *testing.T) *outageFixture {
	t.Helper()
	f := &outageFixture{}
	u, err := url.Parse(pgTestDSN())
	if err != nil || u.Host == "" {
		t.Fatalf("the fault proxy needs a postgres:// URL DSN, got %q", pgTestDSN())
	}
	raw, err := sql.Open("pgx", pgTestDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if err := raw.PingContext(context.Background()); err != nil {
		t.Fatalf("postgres test server unavailable at %s: %v (start it, or set AGENTRY_TEST_POSTGRES_DSN)", u.Host, err)
	}
	if f.proxy, err = faultproxy.Start(u.Host); err != nil {
		t.Fatal(err)
	}
	u.Host = f.proxy.Addr()
	b := make([]byte, 6)
	rand.Read(b)
	schema := "agentry_test_" + hex.EncodeToString(b)
	f.db, err = postgres.Open(context.Background(), postgres.Config{DSN: u.String(), Schema: schema, ID: "pg", QueryTimeout: outageQueryTimeout, MaxOpenConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.proxy.Close()
		f.db.Close()
		raw.ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	})

	cut := tool.MustFunc(tool.FuncConfig{Name: "cut_db", Description: "Cuts the database connection."},
		func(context.Context, struct{}) (string, error) {
			if f.armed.Swap(false) {
				f.proxy.Cut()
			}
			return "ok", nil
		})
	cutting := func(id string) *agent.Agent {
		a, err := agent.New(agent.Config{ID: id, DB: f.db, Tools: []tool.Tool{cut},
			Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{{Name: "cut_db"}}}, {Content: "done"}}})})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	echo, member, step := cutting("echo"), cutting("member"), cutting("step")
	leader := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: team.ToolDelegate, Args: map[string]any{"member_id": "member", "task": "work"}}}},
		{Content: "the team answer"},
	}})
	crew, err := team.New(team.Config{ID: "crew", Model: leader, Members: []*agent.Agent{member}, DB: f.db})
	if err != nil {
		t.Fatal(err)
	}
	flow, err := workflow.New(workflow.Config{ID: "flow", DB: f.db, Steps: []workflow.Step{{Runner: step}}})
	if err != nil {
		t.Fatal(err)
	}
	ts, logs := testServer(t, Config{Agents: []*agent.Agent{echo}, Teams: []*team.Team{crew}, Workflows: []*workflow.Workflow{flow}}, nil)
	f.url, f.logs = ts.URL, logs
	return f
}

// restore reconnects the database and waits until it answers.
func (f *outageFixture) restore(t *testing.T) {
	t.Helper()
	f.proxy.Restore()
	eventually(t, "the database to answer again", func() bool { return f.db.Ping(context.Background()) == nil })
}

// outageTargets are the run routes, with the event that would wrongly
// report a run that was not stored as finished.
var outageTargets = []struct {
	kind, path string
	completed  string
}{
	{"agent", "/agents/echo/runs", "RunCompleted"},
	{"team", "/teams/crew/runs", "TeamRunCompleted"},
	{"workflow", "/workflows/flow/runs", "WorkflowCompleted"},
}

// leaksDB reports whether a client-facing text names the database.
func leaksDB(f *outageFixture, s string) bool {
	_, port, _ := net.SplitHostPort(f.proxy.Addr())
	for _, w := range []string{port, "127.0.0.1", "postgres", "user=", "database=", "sql:", "pgx"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// TestRun_NotStoredIsNeverAcknowledged: the database connection is cut
// while each run executes. A non-streaming run answers 503 {"detail"} (not
// 200 COMPLETED), a stream ends with a StorageError error event and never
// with its completed event, nothing names the database, the run is not
// stored as completed, and the same request succeeds once the database is
// back.
func TestRun_NotStoredIsNeverAcknowledged(t *testing.T) {
	t.Parallel()
	f := newOutageFixture(t)
	for _, tg := range outageTargets {
		for _, stream := range []bool{false, true} {
			name := tg.kind + map[bool]string{false: "/sync", true: "/stream"}[stream]
			t.Run(name, func(t *testing.T) {
				// Not parallel: they share the proxy.
				f.armed.Store(true)
				res := postForm(t, f.url+tg.path, map[string]string{"message": "hi", "stream": map[bool]string{false: "false", true: "true"}[stream]}, nil)
				f.restore(t)
				if leaksDB(f, res.body) {
					t.Errorf("the response names the database: %s", res.body)
				}
				var runID string
				if !stream {
					if res.status != 503 || res.detail(t) != detailRunNotStored {
						t.Fatalf("status %d %s, want 503 %q", res.status, res.body, detailRunNotStored)
					}
				} else {
					if res.status != 200 {
						t.Fatalf("status %d %s", res.status, res.body)
					}
					frames := parseSSE(t, res.body)
					last := frames[len(frames)-1]
					for _, fr := range frames {
						if fr.name == tg.completed {
							t.Fatalf("events %v: %s for a run that was not stored", frameNames(frames), tg.completed)
						}
					}
					if !strings.HasSuffix(last.name, "Error") || last.data["error_type"] != "StorageError" {
						t.Fatalf("events %v, last %s: want a StorageError error event last", frameNames(frames), last.raw)
					}
					runID, _ = last.data["run_id"].(string)
					n := 0
					for _, fr := range frames {
						if fr.data["run_id"] == runID && isTerminal(run.EventType(fr.name)) {
							n++
						}
					}
					if n != 1 {
						t.Fatalf("events %v: want one terminal event of run %s", frameNames(frames), runID)
					}
				}
				if runID != "" {
					if st := storedStatus(f.db, runID); st == run.StatusCompleted {
						t.Fatalf("run %s is stored %s", runID, st)
					}
				}
				if !strings.Contains(f.logs.String(), "run not stored") {
					t.Error("the failure was not logged")
				}
				// The database is back: the same request now succeeds.
				res = postForm(t, f.url+tg.path, map[string]string{"message": "hi", "stream": "false"}, nil)
				if res.status != 200 || !contains(res.body, `"status":"COMPLETED"`) {
					t.Fatalf("retry: status %d %s", res.status, res.body)
				}
			})
		}
	}
}

// TestRun_DatabaseDownAtStartIs503 cuts the database before the request: a
// run in an existing session cannot read it and is answered 503 {"detail"}
// with a generic message, streaming or not; the database's error goes to
// the log with the request id.
func TestRun_DatabaseDownAtStartIs503(t *testing.T) {
	t.Parallel()
	f := newOutageFixture(t)
	for _, tg := range outageTargets {
		for _, stream := range []string{"false", "true"} {
			t.Run(tg.kind+"/stream="+stream, func(t *testing.T) {
				sid := "s-" + tg.kind + "-" + stream
				res := postForm(t, f.url+tg.path, map[string]string{"message": "hi", "stream": "false", "session_id": sid}, nil)
				if res.status != 200 {
					t.Fatalf("creating the session: %d %s", res.status, res.body)
				}
				f.proxy.Cut()
				rid := "req-" + tg.kind + "-" + stream
				res = postForm(t, f.url+tg.path, map[string]string{"message": "hi", "stream": stream, "session_id": sid}, map[string]string{RequestIDHeader: rid})
				f.restore(t)
				if res.status != 503 || res.detail(t) != detailDBUnavailable {
					t.Fatalf("status %d %s, want 503 %q", res.status, res.body, detailDBUnavailable)
				}
				if leaksDB(f, res.body) {
					t.Errorf("the response names the database: %s", res.body)
				}
				var logged bool
				for _, line := range strings.Split(f.logs.String(), "\n") {
					logged = logged || (strings.Contains(line, `"request_id":"`+rid+`"`) && strings.Contains(line, `"level":"ERROR"`) && strings.Contains(line, "session"))
				}
				if !logged {
					t.Errorf("no error log line with request id %s and the cause:\n%s", rid, f.logs.String())
				}
			})
		}
	}
}

// TestQueryTimeout_StalledDatabaseIs503AndNotReady stalls the database
// connection: runs answer 503 within the query timeout instead of hanging,
// /health (liveness) stays 200, /health/ready is 503 until the database
// answers again.
func TestQueryTimeout_StalledDatabaseIs503AndNotReady(t *testing.T) {
	t.Parallel()
	f := newOutageFixture(t)
	if res := get(t, f.url+ReadyPath, nil); res.status != 200 || res.body != "{\"status\":\"ready\"}\n" {
		t.Fatalf("ready before the stall: %d %s", res.status, res.body)
	}
	res := postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": "hi", "stream": "false", "session_id": "stalled"}, nil)
	if res.status != 200 {
		t.Fatalf("creating the session: %d %s", res.status, res.body)
	}
	f.proxy.Stall()
	for _, stream := range []string{"false", "true"} {
		start := time.Now()
		res := postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": "hi", "stream": stream, "session_id": "stalled"}, nil)
		if res.status != 503 || res.detail(t) != detailDBUnavailable {
			t.Fatalf("stream=%s on a stalled database: %d %s, want 503", stream, res.status, res.body)
		}
		// Far more than the query timeout (a loaded machine), far less than
		// a stalled TCP connection can block.
		if took := time.Since(start); took > 10*outageQueryTimeout {
			t.Errorf("stream=%s took %s with a %s query timeout", stream, took, outageQueryTimeout)
		}
	}
	if res := get(t, f.url+"/health", nil); res.status != 200 {
		t.Errorf("/health during the stall: %d %s (liveness must not depend on the database)", res.status, res.body)
	}
	res = get(t, f.url+ReadyPath, nil)
	if res.status != 503 || !strings.HasPrefix(res.detail(t), "not ready") || leaksDB(f, res.body) {
		t.Errorf("%s during the stall: %d %s, want 503 naming no database", ReadyPath, res.status, res.body)
	}
	f.restore(t)
	if res := get(t, f.url+ReadyPath, nil); res.status != 200 {
		t.Errorf("%s after the stall: %d %s", ReadyPath, res.status, res.body)
	}
}

// TestBackgroundRun_RetryWithTheSameIdempotencyKeyAfterAnOutage: a
// background run submitted while the database is down is 503 and leaves
// nothing; the retry with the same key is accepted and stores one run.
func TestBackgroundRun_RetryWithTheSameIdempotencyKeyAfterAnOutage(t *testing.T) {
	t.Parallel()
	f := newOutageFixture(t)
	key := map[string]string{"Idempotency-Key": "outage-retry"}
	fields := map[string]string{"message": "hi", "background": "true", "session_id": "bg"}
	f.proxy.Cut()
	res := postForm(t, f.url+"/agents/echo/runs", fields, key)
	f.restore(t)
	if res.status != 503 || res.detail(t) != detailDBUnavailable {
		t.Fatalf("submission during the outage: %d %s, want 503", res.status, res.body)
	}
	res = postForm(t, f.url+"/agents/echo/runs", fields, key)
	if res.status != 202 {
		t.Fatalf("retry: %d %s", res.status, res.body)
	}
	runID := decode[backgroundAccepted](t, res).RunID
	eventually(t, "the run to complete", func() bool { return storedStatus(f.db, runID) == run.StatusCompleted })
	if n := countRuns(t, f.db, db.RunFilter{SessionID: "bg"}); n != 1 {
		t.Fatalf("%d runs stored in the session, want 1", n)
	}
	if res := postForm(t, f.url+"/agents/echo/runs", fields, key); res.status != 202 || decode[backgroundAccepted](t, res).RunID != runID {
		t.Fatalf("a second retry must find the same run: %d %s", res.status, res.body)
	}
}
