package mcpserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/tool"
)

// An agent without a database stores no run to check its owner against;
// under user isolation another user's run in progress is still not found
// by cancel_run and continue_run (it used to be cancelled for anyone who
// knew its id), while its owner can cancel it.
func TestCancelRun_NoDatabaseOtherUsersRunIsNotFound(t *testing.T) {
	runIDs, release := make(chan string, 1), make(chan struct{})
	wait := tool.MustFunc(tool.FuncConfig{Name: "wait", Description: "Waits."},
		func(ctx context.Context, _ struct{}) (string, error) {
			rc, _ := agent.FromContext(ctx)
			runIDs <- rc.RunID
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "waited", nil
		})
	h := newHarness(t, harnessConfig{build: func(*db.DB) ([]*agent.Agent, []*team.Team) {
		a, err := agent.New(agent.Config{ID: "nodb", Tools: []tool.Tool{wait}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "wait"}}}, {Content: "done waiting"}}})})
		if err != nil {
			t.Fatal(err)
		}
		return []*agent.Agent{a}, nil
	}})
	hour := time.Now().Add(time.Hour)
	alice, bob := h.mustConnect(t, token(t, "alice", hour)), h.mustConnect(t, token(t, "bob", hour))
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		r, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_agent", Arguments: map[string]any{"agent_id": "nodb", "message": "wait"}})
		if err != nil {
			r = errorResult(err)
		}
		done <- r
	}()
	runID := <-runIDs
	for _, name := range []string{"cancel_run", "continue_run"} {
		r := callTool(t, bob, name, map[string]any{"agent_id": "nodb", "run_id": runID})
		if !r.IsError || !strings.Contains(resultText(r), "not found") {
			t.Errorf("bob's %s of alice's run = %q (error %v), want not found", name, resultText(r), r.IsError)
		}
	}
	close(release)
	if r := <-done; r.IsError || !strings.Contains(resultText(r), "done waiting") {
		t.Fatalf("alice's run = %q (error %v), want it completed", resultText(r), r.IsError)
	}

	// The owner still cancels her own run.
	release = make(chan struct{})
	go func() {
		r, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_agent", Arguments: map[string]any{"agent_id": "nodb", "message": "wait"}})
		if err != nil {
			r = errorResult(err)
		}
		done <- r
	}()
	runID = <-runIDs
	other := h.mustConnect(t, token(t, "alice", hour))
	if r := callTool(t, other, "cancel_run", map[string]any{"agent_id": "nodb", "run_id": runID}); r.IsError {
		t.Fatalf("alice's cancel_run of her run = %q", resultText(r))
	}
	if r := <-done; !r.IsError || !strings.Contains(resultText(r), "cancelled") {
		t.Fatalf("alice's cancelled run = %q (error %v), want cancelled", resultText(r), r.IsError)
	}
}

// An authenticated caller runs as its token's user, an admin too, whatever
// user_id its arguments name (Agno's MCP server binds user_id to the
// token's subject, as agentos's run routes now do); only an unauthenticated
// caller runs as the user it names. An admin naming alice stored the run
// as alice's.
func TestRunAgent_ATokenRunsAsItsOwnUser(t *testing.T) {
	h := newHarness(t, harnessConfig{excluded: true})
	hour := time.Now().Add(time.Hour)
	admin := h.mustConnect(t, token(t, "root", hour, auth.AdminScope))
	bob := h.mustConnect(t, token(t, "bob", hour))
	anon := h.mustConnect(t, "")
	for _, c := range []struct {
		name  string
		who   *mcp.ClientSession
		named string
		want  string
	}{{"admin naming alice", admin, "alice", "root"}, {"admin", admin, "", "root"}, {"bob naming alice", bob, "alice", "bob"},
		{"unauthenticated naming alice", anon, "alice", "alice"}} {
		args := map[string]any{"agent_id": "echo", "message": "hello"}
		if c.named != "" {
			args["user_id"] = c.named
		}
		r := callTool(t, c.who, "run_agent", args)
		if r.IsError {
			t.Fatalf("%s: run_agent: %q", c.name, resultText(r))
		}
		runID, _ := structuredMap(t, r)["run_id"].(string)
		got, err := h.db.GetRun(context.Background(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if got.UserID != c.want {
			t.Errorf("%s: stored as %q, want %q", c.name, got.UserID, c.want)
		}
	}
}

// Another user's MCP session is not found (404, as a session that does not
// exist), never forbidden: a 403 told the caller that the session id is a
// live session of someone else.
func TestSession_OtherUsersSessionIsNotFound(t *testing.T) {
	h := newHarness(t, harnessConfig{excluded: true})
	hour := time.Now().Add(time.Hour)
	alice := h.mustConnect(t, token(t, "alice", hour))
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`
	post := func(tok, session string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, h.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", alice.InitializeResult().ProtocolVersion)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res.StatusCode
	}
	bob := token(t, "bob", hour)
	unknown := post(bob, "no-such-session")
	if unknown != http.StatusNotFound {
		t.Fatalf("an unknown session: %d, want 404", unknown)
	}
	if got := post(bob, alice.ID()); got != unknown {
		t.Errorf("bob using alice's session: %d, want %d as for a session that does not exist", got, unknown)
	}
	// A request the OS let through unauthenticated (an excluded path).
	if got := post("", alice.ID()); got != unknown {
		t.Errorf("an unauthenticated request using alice's session: %d, want %d", got, unknown)
	}
	if got := post(token(t, "alice", hour), alice.ID()); got != http.StatusOK {
		t.Errorf("alice using her session: %d, want 200", got)
	}
}
