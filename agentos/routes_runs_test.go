package agentos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

func TestCreateRun_StreamsEventsAsSSE(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	tests := []struct {
		name   string
		encode func() (io.Reader, map[string]string)
	}{
		{"urlencoded", func() (io.Reader, map[string]string) { return form(map[string]string{"message": "hello"}) }},
		{"multipart with a file", func() (io.Reader, map[string]string) {
			return multipartForm(t, map[string]string{"message": "hello", "stream": "true"}, map[string]string{"notes.txt": "some notes"})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body, hdr := tc.encode()
			res := do(t, http.MethodPost, f.url+"/agents/echo/runs", body, hdr)
			if res.status != 200 || !strings.HasPrefix(res.header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d type %q body %s", res.status, res.header.Get("Content-Type"), res.body)
			}
			frames := parseSSE(t, res.body)
			if len(frames) < 2 || frames[0].name != "RunStarted" || frames[len(frames)-1].name != "RunCompleted" {
				t.Fatalf("events %v", frameNames(frames))
			}
			for _, fr := range frames {
				if fr.data["event"] != fr.name || fr.data["data"] != nil || strings.Contains(fr.raw, "null") ||
					fr.data["run_id"] == nil || fr.data["agent_id"] != "echo" {
					t.Errorf("frame %s = %s", fr.name, fr.raw)
				}
				if _, ok := fr.data["created_at"].(float64); !ok {
					t.Errorf("frame %s created_at is not a number: %s", fr.name, fr.raw)
				}
			}
			sid, _ := frames[0].data["session_id"].(string)
			if sid == "" {
				t.Fatalf("RunStarted has no session_id: %s", frames[0].raw)
			}
			last := frames[len(frames)-1]
			if last.data["content"] != "hi there" {
				t.Errorf("RunCompleted content = %v", last.data["content"])
			}
			runID := last.data["run_id"].(string)
			if storedStatus(f.db, runID) != run.StatusCompleted {
				t.Errorf("stored status = %q", storedStatus(f.db, runID))
			}
			got := decode[map[string]any](t, get(t, f.url+"/agents/echo/runs/"+runID, nil))
			if got["session_id"] != sid || got["run_input"] != "hello" || got["content"] != "hi there" {
				t.Errorf("GET run = %v", got)
			}
			if strings.Contains(tc.name, "file") {
				files, _ := got["files"].([]any)
				if len(files) != 0 {
					// files of the run's output, not its input: the input keeps them.
					t.Errorf("output files = %v", files)
				}
				row, _ := f.db.GetRun(context.Background(), runID)
				out, _ := row.Output()
				if out.Input == nil || len(out.Input.Files) != 1 || out.Input.Files[0].Name != "notes.txt" || string(out.Input.Files[0].Content) != "some notes" {
					t.Errorf("stored input = %+v", out.Input)
				}
			}
		})
	}
}

func frameNames(frames []sseFrame) []string {
	var out []string
	for _, f := range frames {
		out = append(out, f.name)
	}
	return out
}

func TestCreateRun_NonStreamReturnsTheRun(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	res := postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": "hello", "stream": "false", "user_id": "u1",
		"session_id": "s-1", "metadata": `{"k":"v"}`, "session_state": `{"cart":["apple"]}`}, nil)
	if res.status != 200 || res.header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d body %s", res.status, res.body)
	}
	out := decode[run.Output](t, res)
	if out.Status != run.StatusCompleted || out.Content != "hi there" || out.SessionID != "s-1" || out.UserID != "u1" ||
		out.Metadata["k"] != "v" || out.SessionState["cart"] == nil {
		t.Fatalf("run = %+v", out)
	}
	if storedStatus(f.db, out.RunID) != run.StatusCompleted {
		t.Errorf("not stored")
	}
	list := decode[[]map[string]any](t, get(t, f.url+"/agents/echo/runs?session_id=s-1&status=completed", nil))
	if len(list) != 1 || list[0]["run_id"] != out.RunID {
		t.Errorf("list = %v", list)
	}
	if list := decode[[]map[string]any](t, get(t, f.url+"/agents/echo/runs?status=ERROR", nil)); len(list) != 0 {
		t.Errorf("ERROR list = %v", list)
	}
	if res := get(t, f.url+"/agents/echo/runs?status=done", nil); res.status != 422 {
		t.Errorf("bad status filter = %d", res.status)
	}
}

func TestCreateRun_EmptySessionIDStartsASessionTheNextRunContinues(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	first := parseSSE(t, postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": "my name is Ada", "session_id": ""}, nil).body)
	sid, _ := first[0].data["session_id"].(string)
	if sid == "" {
		t.Fatalf("RunStarted = %s", first[0].raw)
	}
	second := parseSSE(t, postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": "what is my name?", "session_id": sid}, nil).body)
	if second[0].data["session_id"] != sid {
		t.Fatalf("second run session = %v, want %s", second[0].data["session_id"], sid)
	}
	msgs := f.echo.lastMessages()
	if !slices.Contains(msgs, "user:my name is Ada") || !slices.Contains(msgs, "assistant:hi there") || msgs[len(msgs)-1] != "user:what is my name?" {
		t.Errorf("model saw %q, want the first run as history", msgs)
	}
	if list := decode[[]map[string]any](t, get(t, f.url+"/agents/echo/runs?session_id="+sid, nil)); len(list) != 2 {
		t.Errorf("session runs = %d", len(list))
	}
}

func TestCreateRun_BadInputIsA4xxAndStoresNothing(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{BodyLimit: 64 << 10})
	urlenc := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	truncated, mpHdr := multipartForm(t, map[string]string{"message": "hello"}, map[string]string{"a.txt": strings.Repeat("x", 1000)})
	whole, _ := io.ReadAll(truncated)
	cut := string(whole[:len(whole)-40])
	tests := []struct {
		name   string
		path   string
		body   string
		hdr    map[string]string
		status int
	}{
		{"unknown agent", "/agents/nope/runs", "message=hi", urlenc, 404},
		{"missing message", "/agents/echo/runs", "stream=false", urlenc, 422},
		{"blank message", "/agents/echo/runs", "message=%20%20", urlenc, 422},
		{"invalid UTF-8 message", "/agents/echo/runs", "message=%ff%fe", urlenc, 422},
		{"invalid session_state JSON", "/agents/echo/runs", "message=hi&session_state=%7Bnope", urlenc, 422},
		{"output_schema not a schema", "/agents/echo/runs", "message=hi&output_schema=" + `%7B%22type%22%3A5%7D`, urlenc, 422},
		{"oversized body", "/agents/echo/runs", "message=" + strings.Repeat("a", 70<<10), urlenc, 413},
		{"truncated multipart", "/agents/echo/runs", cut, mpHdr, 422},
		{"unsupported content type", "/agents/echo/runs", `{"message":"hi"}`, map[string]string{"Content-Type": "application/json"}, 415},
		{"idempotency key too long", "/agents/echo/runs", "message=hi&background=true&stream=false",
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Idempotency-Key": strings.Repeat("k", 513)}, 422},
		// Agno's status and detail: 400, "Background execution requires a database ...".
		{"background without a database", "/agents/nodb/runs", "message=hi&background=true", urlenc, 400},
		{"streamed background without a database", "/agents/nodb/runs", "message=hi&background=true&stream=true", urlenc, 400},
		{"team runs", "/teams/t1/runs", "message=hi", urlenc, 404},
		{"workflow runs", "/workflows/w1/runs", "message=hi", urlenc, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := do(t, http.MethodPost, f.url+tc.path, strings.NewReader(tc.body), tc.hdr)
			if res.status != tc.status {
				t.Fatalf("status %d, want %d: %s", res.status, tc.status, res.body)
			}
			if d := res.detail(t); d == "" {
				t.Error("empty detail")
			}
		})
	}
	if res := postForm(t, f.url+"/agents/nodb/runs", map[string]string{"message": "hi", "background": "true"}, nil); res.detail(t) != "Background execution requires a database to be configured on the agent" {
		t.Errorf("background without a database: %s", res.body)
	}
	if n := countRuns(t, f.db, db.RunFilter{}); n != 0 {
		t.Errorf("%d runs stored after bad input", n)
	}
	if _, total, err := f.db.ListSessions(context.Background(), db.SessionFilter{Limit: 10, Page: 1}); err != nil || total != 0 {
		t.Errorf("%d sessions stored after bad input (%v)", total, err)
	}
}

func TestTeamAndWorkflowRunRoutes_AreNotFound(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	for _, c := range []struct{ method, path, detail string }{
		{"GET", "/teams/t/runs", "Team not found"},
		{"GET", "/teams/t/runs/r", "Team not found"},
		{"POST", "/teams/t/runs/r/cancel", "Team not found"},
		{"POST", "/teams/t/runs/r/continue", "Team not found"},
		{"GET", "/workflows/w/runs", "Workflow not found"},
		{"GET", "/workflows/w/runs/r", "Workflow not found"},
		{"POST", "/workflows/w/runs/r/cancel", "Workflow not found"},
		{"POST", "/workflows/w/runs/r/continue", "Workflow not found"},
		{"GET", "/agents/nope/runs", "Agent not found"},
		{"GET", "/agents/echo/runs/missing", "Run with ID missing not found"},
		{"POST", "/agents/echo/runs/missing/cancel", "Run with ID missing not found"},
		{"POST", "/agents/echo/runs/missing/continue", "Run with ID missing not found"},
	} {
		res := do(t, c.method, f.url+c.path, nil, nil)
		if res.status != 404 || res.detail(t) != c.detail {
			t.Errorf("%s %s = %d %s", c.method, c.path, res.status, res.body)
		}
	}
}

func TestCreateRun_BackgroundAnswers202ThenCompletes(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	res := postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": "later", "background": "true"}, nil)
	if res.status != 202 {
		t.Fatalf("status %d %s", res.status, res.body)
	}
	acc := decode[map[string]string](t, res)
	if acc["status"] != "PENDING" || acc["run_id"] == "" || acc["session_id"] == "" {
		t.Fatalf("202 body = %v", acc)
	}
	eventually(t, "the background run to complete", func() bool { return storedStatus(f.db, acc["run_id"]) == run.StatusCompleted })
	got := decode[map[string]any](t, get(t, f.url+"/agents/echo/runs/"+acc["run_id"], nil))
	if got["content"] != "hi there" || got["session_id"] != acc["session_id"] {
		t.Errorf("GET run = %v", got)
	}
}

func TestCreateRun_IdempotencyKeyDedupsConcurrentBackgroundRuns(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	const n = 10
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := sendForm(f.url+"/agents/slow/runs",
				map[string]string{"message": "once", "background": "true", "stream": "false", "user_id": "u1"},
				map[string]string{"Idempotency-Key": "order-42"})
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			var acc map[string]string
			if res.StatusCode != 202 || json.NewDecoder(res.Body).Decode(&acc) != nil {
				t.Errorf("status %d", res.StatusCode)
				return
			}
			ids[i] = acc["run_id"]
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || id == "" {
			t.Fatalf("run ids = %v, want one run", ids)
		}
	}
	if c := countRuns(t, f.db, db.RunFilter{AgentID: "slow"}); c != 1 {
		t.Errorf("%d runs stored, want 1", c)
	}
	row, err := f.db.GetRun(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := row.Output(); out.Metadata["idempotency_key"] != "order-42" {
		t.Errorf("metadata = %v", out.Metadata)
	}
	// The same key for another user is another run.
	res := postForm(t, f.url+"/agents/slow/runs", map[string]string{"message": "once", "background": "true", "user_id": "u2"},
		map[string]string{"Idempotency-Key": "order-42"})
	if acc := decode[map[string]string](t, res); res.status != 202 || acc["run_id"] == ids[0] {
		t.Errorf("other user = %d %v", res.status, acc)
	}
}

func TestCancelRun(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	ctx := context.Background()
	// storedRun writes a run row directly, as a crashed process would leave it.
	storedRun := func(t *testing.T, status run.Status) string {
		t.Helper()
		id := "stored-" + strings.ToLower(string(status))
		if _, err := f.db.UpsertSession(ctx, &db.Session{SessionID: "s-" + id, SessionType: run.TypeAgent, AgentID: "slow"}); err != nil {
			t.Fatal(err)
		}
		row, _ := db.RunFromOutput(&run.Output{RunID: id, AgentID: "slow", SessionID: "s-" + id, Status: status, Content: "partial"})
		if _, err := f.db.UpsertRun(ctx, row); err != nil {
			t.Fatal(err)
		}
		return id
	}
	tests := []struct {
		name       string
		runID      func(t *testing.T) string
		wantStatus int
		wantStored run.Status
	}{
		{"background run in flight", func(t *testing.T) string {
			acc := decode[map[string]string](t, postForm(t, f.url+"/agents/slow/runs", map[string]string{"message": "wait", "background": "true"}, nil))
			eventually(t, "the run to start", func() bool { return storedStatus(f.db, acc["run_id"]) == run.StatusRunning })
			return acc["run_id"]
		}, 200, run.StatusCancelled},
		{"stored RUNNING run not in flight", func(t *testing.T) string { return storedRun(t, run.StatusRunning) }, 200, run.StatusCancelled},
		{"stored PENDING run not in flight", func(t *testing.T) string { return storedRun(t, run.StatusPending) }, 200, run.StatusCancelled},
		{"already cancelled run", func(t *testing.T) string { return storedRun(t, run.StatusCancelled) }, 200, run.StatusCancelled},
		{"completed run", func(t *testing.T) string { return storedRun(t, run.StatusCompleted) }, 409, run.StatusCompleted},
		{"errored run", func(t *testing.T) string { return storedRun(t, run.StatusError) }, 409, run.StatusError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := tc.runID(t)
			res := do(t, http.MethodPost, f.url+"/agents/slow/runs/"+id+"/cancel", nil, nil)
			if res.status != tc.wantStatus {
				t.Fatalf("cancel = %d %s", res.status, res.body)
			}
			if got := storedStatus(f.db, id); got != tc.wantStored {
				t.Errorf("stored status = %s, want %s", got, tc.wantStored)
			}
			if tc.wantStatus == 200 && decode[map[string]string](t, res)["status"] != "CANCELLED" {
				t.Errorf("body = %s", res.body)
			}
		})
	}
	if res := do(t, http.MethodPost, f.url+"/agents/echo/runs/stored-running/cancel", nil, nil); res.status != 404 {
		t.Errorf("cancel through another agent = %d", res.status)
	}
}

func TestCancelAndContinue_AnotherUsersRunIsNotFoundAndUntouched(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{UserIsolation: true, Auth: Auth{Authenticator: jwtAuthenticator(t, "")}})
	alice := bearer(hsToken(t, jwt.MapClaims{"sub": "alice"}))
	bob := bearer(hsToken(t, jwt.MapClaims{"sub": "bob"}))
	admin := bearer(hsToken(t, jwt.MapClaims{"sub": "root", "scopes": []string{auth.AdminScope}}))
	// alice: a paused run and a background run in flight.
	paused := decode[run.Output](t, postForm(t, f.url+"/agents/hitl/runs", map[string]string{"message": "delete", "stream": "false", "user_id": "mallory"}, alice))
	if paused.Status != run.StatusPaused || paused.UserID != "alice" {
		t.Fatalf("paused run = %s user %q", paused.Status, paused.UserID)
	}
	acc := decode[map[string]string](t, postForm(t, f.url+"/agents/slow/runs", map[string]string{"message": "wait", "background": "true"}, alice))
	eventually(t, "the run to start", func() bool { return storedStatus(f.db, acc["run_id"]) == run.StatusRunning })

	confirm := fmt.Sprintf(`[{"tool_call_id":%q,"confirmed":true}]`, paused.Tools[0].ToolCallID)
	for _, c := range []struct{ path, body string }{
		{"/agents/hitl/runs/" + paused.RunID + "/continue", "tools=" + confirm + "&stream=false"},
		{"/agents/hitl/runs/" + paused.RunID + "/cancel", ""},
		{"/agents/slow/runs/" + acc["run_id"] + "/cancel", ""},
	} {
		hdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Authorization": bob["Authorization"]}
		if res := do(t, http.MethodPost, f.url+c.path, strings.NewReader(c.body), hdr); res.status != 404 {
			t.Errorf("bob POST %s = %d %s", c.path, res.status, res.body)
		}
		if res := get(t, f.url+strings.TrimSuffix(strings.TrimSuffix(c.path, "/continue"), "/cancel"), bob); res.status != 404 {
			t.Errorf("bob GET = %d", res.status)
		}
	}
	if got := storedStatus(f.db, paused.RunID); got != run.StatusPaused || f.executed.Load() != 0 {
		t.Errorf("alice's paused run after bob: %s, tool executed %d times", got, f.executed.Load())
	}
	if got := storedStatus(f.db, acc["run_id"]); got != run.StatusRunning {
		t.Errorf("alice's running run after bob: %s", got)
	}
	if list := decode[[]map[string]any](t, get(t, f.url+"/agents/hitl/runs", bob)); len(list) != 0 {
		t.Errorf("bob lists %v", list)
	}
	// A user_id in the query cannot widen bob's scope.
	if list := decode[[]map[string]any](t, get(t, f.url+"/agents/hitl/runs?user_id=alice", bob)); len(list) != 0 {
		t.Errorf("bob lists alice's runs with ?user_id: %v", list)
	}
	// The owner and an admin can.
	if list := decode[[]map[string]any](t, get(t, f.url+"/agents/hitl/runs", alice)); len(list) != 1 {
		t.Errorf("alice lists %d runs", len(list))
	}
	if res := do(t, http.MethodPost, f.url+"/agents/slow/runs/"+acc["run_id"]+"/cancel", nil, admin); res.status != 200 {
		t.Errorf("admin cancel = %d %s", res.status, res.body)
	}
	res := postForm(t, f.url+"/agents/hitl/runs/"+paused.RunID+"/continue", map[string]string{"tools": confirm, "stream": "false"}, alice)
	if out := decode[run.Output](t, res); res.status != 200 || out.Status != run.StatusCompleted || f.executed.Load() != 1 {
		t.Errorf("alice continue = %d %s", res.status, res.body)
	}
}

func TestContinueRun_ResumesAPausedRun(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	pause := func(t *testing.T) run.Output {
		t.Helper()
		out := decode[run.Output](t, postForm(t, f.url+"/agents/hitl/runs", map[string]string{"message": "delete it", "stream": "false"}, nil))
		if out.Status != run.StatusPaused || len(out.Requirements) != 1 || !out.Tools[0].RequiresConfirmation {
			t.Fatalf("run = %+v", out)
		}
		return out
	}
	t.Run("tools confirmed, not streamed", func(t *testing.T) {
		p := pause(t)
		tools := fmt.Sprintf(`[{"tool_call_id":%q,"confirmed":true}]`, p.Tools[0].ToolCallID)
		res := postForm(t, f.url+"/agents/hitl/runs/"+p.RunID+"/continue", map[string]string{"tools": tools, "stream": "false", "session_id": p.SessionID}, nil)
		out := decode[run.Output](t, res)
		if res.status != 200 || out.Status != run.StatusCompleted || out.Content != "all done" || out.RunID != p.RunID {
			t.Fatalf("continue = %d %s", res.status, res.body)
		}
		if storedStatus(f.db, p.RunID) != run.StatusCompleted {
			t.Error("continued run not stored COMPLETED")
		}
		// Continuing again: the run is no longer PAUSED.
		res = postForm(t, f.url+"/agents/hitl/runs/"+p.RunID+"/continue", map[string]string{"tools": tools}, nil)
		if res.status != 409 || !strings.Contains(res.detail(t), "only a PAUSED run can be continued") {
			t.Errorf("second continue = %d %s", res.status, res.body)
		}
	})
	t.Run("requirements rejected, streamed", func(t *testing.T) {
		p := pause(t)
		req := p.Requirements[0]
		no := false
		req.ToolExecution.Confirmed = &no
		b, _ := json.Marshal([]run.Requirement{req})
		res := postForm(t, f.url+"/agents/hitl/runs/"+p.RunID+"/continue", map[string]string{"requirements": string(b)}, nil)
		frames := parseSSE(t, res.body)
		if res.status != 200 || len(frames) < 2 || frames[0].name != "RunContinued" || frames[len(frames)-1].name != "RunCompleted" {
			t.Fatalf("continue stream = %d %v", res.status, frameNames(frames))
		}
	})
	t.Run("unresolved requirement", func(t *testing.T) {
		p := pause(t)
		res := postForm(t, f.url+"/agents/hitl/runs/"+p.RunID+"/continue", map[string]string{"stream": "false"}, nil)
		if res.status != 422 || storedStatus(f.db, p.RunID) != run.StatusPaused {
			t.Errorf("continue without resolution = %d %s", res.status, res.body)
		}
	})
	t.Run("malformed tools JSON", func(t *testing.T) {
		p := pause(t)
		res := postForm(t, f.url+"/agents/hitl/runs/"+p.RunID+"/continue", map[string]string{"tools": "{"}, nil)
		if res.status != 400 || !strings.Contains(res.body, "Invalid JSON in tools field") || storedStatus(f.db, p.RunID) != run.StatusPaused {
			t.Errorf("malformed tools = %d %s (Agno: 400)", res.status, res.body)
		}
	})
	t.Run("wrong session", func(t *testing.T) {
		p := pause(t)
		res := postForm(t, f.url+"/agents/hitl/runs/"+p.RunID+"/continue", map[string]string{"session_id": "other"}, nil)
		if res.status != 404 {
			t.Errorf("wrong session = %d %s", res.status, res.body)
		}
	})
	if f.executed.Load() != 1 {
		t.Errorf("tool executed %d times, want once (only the confirmed run)", f.executed.Load())
	}
}

func TestStreamRun_ClientDisconnectCancelsTheRun(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	body, hdr := form(map[string]string{"message": "take your time"})
	req, err := http.NewRequest(http.MethodPost, f.url+"/agents/slow/runs", body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	// A client of its own, so closing the body really closes the connection.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := readFirstFrame(t, bufio.NewReader(res.Body))
	if first.name != "RunStarted" {
		t.Fatalf("first event %s", first.name)
	}
	_ = res.Body.Close()
	runID := first.data["run_id"].(string)
	eventually(t, "the run to be stored CANCELLED", func() bool { return storedStatus(f.db, runID) == run.StatusCancelled })
	got := decode[map[string]any](t, get(t, f.url+"/agents/slow/runs/"+runID, nil))
	if got["status"] != "CANCELLED" {
		t.Errorf("GET run = %v", got)
	}
}

func TestCancelRun_StreamingRunEndsWithRunCancelled(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	res, err := sendForm(f.url+"/agents/slow/runs", map[string]string{"message": "take your time"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	runID := readFirstFrame(t, br).data["run_id"].(string)
	cancel := do(t, http.MethodPost, f.url+"/agents/slow/runs/"+runID+"/cancel", nil, nil)
	if cancel.status != 200 || decode[map[string]string](t, cancel)["status"] != "CANCELLED" {
		t.Fatalf("cancel = %d %s", cancel.status, cancel.body)
	}
	rest, _ := io.ReadAll(br)
	frames := parseSSE(t, string(rest))
	if last := frames[len(frames)-1]; last.name != "RunCancelled" || last.data["reason"] == nil {
		t.Errorf("stream ended with %v", frameNames(frames))
	}
	if got := storedStatus(f.db, runID); got != run.StatusCancelled {
		t.Errorf("stored %s", got)
	}
}

func TestContinueRun_ConcurrentContinuesExecuteTheToolOnce(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	p := decode[run.Output](t, postForm(t, f.url+"/agents/hitl/runs", map[string]string{"message": "delete it", "stream": "false"}, nil))
	tools := fmt.Sprintf(`[{"tool_call_id":%q,"confirmed":true}]`, p.Tools[0].ToolCallID)
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := sendForm(f.url+"/agents/hitl/runs/"+p.RunID+"/continue", map[string]string{"tools": tools, "stream": "false"}, nil)
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			statuses[i] = res.StatusCode
		}()
	}
	wg.Wait()
	ok := 0
	for _, s := range statuses {
		switch s {
		case 200:
			ok++
		case 409:
		default:
			t.Errorf("status %d", s)
		}
	}
	if ok != 1 || f.executed.Load() != 1 || storedStatus(f.db, p.RunID) != run.StatusCompleted {
		t.Errorf("statuses %v, tool executed %d times, stored %s", statuses, f.executed.Load(), storedStatus(f.db, p.RunID))
	}
}

func TestCreateRun_FailureAfterStreamingBeganIsARunErrorEvent(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	// echo answers "hi there", which is not JSON: the per-run output schema
	// fails the run after RunStarted was sent.
	res := postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": "hello",
		"output_schema": `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`}, nil)
	if res.status != 200 {
		t.Fatalf("status %d %s", res.status, res.body)
	}
	frames := parseSSE(t, res.body)
	last := frames[len(frames)-1]
	if frames[0].name != "RunStarted" || last.name != "RunError" || last.data["error_type"] != "OutputParsingError" || last.data["content"] == "" {
		t.Fatalf("events %v, last %s", frameNames(frames), last.raw)
	}
	if got := storedStatus(f.db, last.data["run_id"].(string)); got != run.StatusError {
		t.Errorf("stored %s", got)
	}
}

// TestCreateRun_UnscopedRunAsAnotherUserInAnOwnedSessionIsRefused: without
// user isolation a caller may name any user, but a run as bob in alice's
// session could never be stored (the session is alice's), so it is refused
// before it runs with 409, in every mode, and alice's session is untouched.
// It is neither a 200 for a run that was not stored nor a 503 that says the
// database is down.
func TestCreateRun_UnscopedRunAsAnotherUserInAnOwnedSessionIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	for _, mode := range []map[string]string{
		{"stream": "false"},
		{"stream": "true"},
		{"background": "true"},
	} {
		fields := map[string]string{"message": "hi", "session_id": "s-alice", "user_id": "bob"}
		maps.Copy(fields, mode)
		res := postForm(t, f.url+"/agents/echo/runs", fields, nil)
		if res.status != http.StatusConflict || !strings.Contains(res.detail(t), "belongs to another user") {
			t.Errorf("%v: %d %s, want 409 saying the session belongs to another user", mode, res.status, res.body)
		}
	}
	if n := countRuns(t, f.db, db.RunFilter{SessionID: "s-alice"}); n != 1 {
		t.Errorf("alice's session holds %d runs, want her 1", n)
	}
	s, err := f.db.GetSession(context.Background(), "s-alice")
	if err != nil || s.UserID != "alice" {
		t.Errorf("alice's session = %+v, %v", s, err)
	}
	// The owner, or a caller naming no user, still runs in it.
	for _, user := range []string{"alice", ""} {
		res := postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": "hi", "stream": "false", "session_id": "s-alice", "user_id": user}, nil)
		if res.status != 200 {
			t.Errorf("user %q: %d %s", user, res.status, res.body)
		}
	}
}
