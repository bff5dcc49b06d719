package agentos

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/config"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/mcp/mcpserver"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// bearer adds a token to every request of an MCP client.
type mcpBearer struct {
	token string
	next  http.RoundTripper
}

func (b mcpBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpConnect opens a go-sdk client session on url/mcp with token ("" for none).
func mcpConnect(t *testing.T, url, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: http.DefaultTransport}
	if token != "" {
		hc.Transport = mcpBearer{token: token, next: http.DefaultTransport}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func structured(t *testing.T, r *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	return m
}

func isolatedMCP(t *testing.T, mcpCfg MCP) *runsFixture {
	t.Helper()
	mcpCfg.Enabled = true
	return newRunsFixture(t, Config{Auth: Auth{Authenticator: rsaAuthenticator(t)}, UserIsolation: true, MCP: mcpCfg})
}

func TestMCP_InitializeListToolsRunAndListSessions(t *testing.T) {
	f := isolatedMCP(t, MCP{})
	cs := mcpConnect(t, f.url, rsToken(t, "alice"), nil)
	if cs.InitializeResult().ServerInfo.Name == "" {
		t.Fatal("no server info after initialize")
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	want := []string{"cancel_run", "continue_run", "get_agentos_config", "get_memories", "get_session_runs", "get_sessions", "run_agent", "run_team", "run_workflow"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	cfg := structured(t, callTool(t, cs, "get_agentos_config", nil))
	if agents, _ := cfg["agents"].([]any); len(agents) != 4 {
		t.Fatalf("config agents = %v", cfg["agents"])
	}
	res := callTool(t, cs, "run_agent", map[string]any{"agent_id": "echo", "message": "hello"})
	if res.IsError || resultText(res) != "hi there" {
		t.Fatalf("run_agent = %q (error %v)", resultText(res), res.IsError)
	}
	st := structured(t, res)
	if st["status"] != "COMPLETED" || st["session_id"] == "" || st["run_id"] == "" {
		t.Fatalf("structured = %v", st)
	}
	row, err := f.db.GetRun(context.Background(), st["run_id"].(string))
	if err != nil || row.UserID != "alice" {
		t.Fatalf("stored run %+v, %v: want user alice", row, err)
	}
	sessions := structured(t, callTool(t, cs, "get_sessions", nil))
	data, _ := sessions["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["session_id"] != st["session_id"] {
		t.Fatalf("get_sessions = %v", sessions)
	}
	runs := structured(t, callTool(t, cs, "get_session_runs", map[string]any{"session_id": st["session_id"]}))
	list, _ := runs["result"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["content"] != "hi there" || list[0].(map[string]any)["run_input"] != "hello" {
		t.Fatalf("get_session_runs = %v", runs)
	}
	// Continuing the session through MCP adds a second run to it.
	res = callTool(t, cs, "run_agent", map[string]any{"agent_id": "echo", "message": "again", "session_id": st["session_id"]})
	if res.IsError || structured(t, res)["session_id"] != st["session_id"] {
		t.Fatalf("second run: %q %v", resultText(res), res.StructuredContent)
	}
}

func TestMCP_UsersAreIsolated(t *testing.T) {
	f := isolatedMCP(t, MCP{})
	alice := mcpConnect(t, f.url, rsToken(t, "alice"), nil)
	res := callTool(t, alice, "run_agent", map[string]any{"agent_id": "echo", "message": "secret"})
	sessionID := structured(t, res)["session_id"].(string)
	runID := structured(t, res)["run_id"].(string)

	ctx := context.Background()
	for _, m := range []db.Memory{{MemoryID: "m-alice", Memory: "alice likes tea", UserID: "alice"},
		{MemoryID: "m-bob", Memory: "bob likes coffee", UserID: "bob"}} {
		if _, err := f.db.UpsertMemory(db.WithUserScope(ctx, m.UserID), &m); err != nil {
			t.Fatal(err)
		}
	}
	mems := structured(t, callTool(t, alice, "get_memories", nil))
	if data, _ := mems["data"].([]any); len(data) != 1 || data[0].(map[string]any)["memory"] != "alice likes tea" {
		t.Fatalf("alice's get_memories = %v, want her one memory", mems)
	}

	bob := mcpConnect(t, f.url, rsToken(t, "bob"), nil)
	for _, args := range []map[string]any{nil, {"user_id": "alice"}, {"search_content": "tea"}} {
		mems := structured(t, callTool(t, bob, "get_memories", args))
		data, _ := mems["data"].([]any)
		for _, m := range data {
			if m.(map[string]any)["user_id"] != "bob" {
				t.Fatalf("bob's get_memories(%v) = %v: another user's memory", args, mems)
			}
		}
		if args == nil && len(data) != 1 {
			t.Fatalf("bob's get_memories = %v, want his one memory", mems)
		}
	}
	sessions := structured(t, callTool(t, bob, "get_sessions", map[string]any{"user_id": "alice"}))
	if data, _ := sessions["data"].([]any); len(data) != 0 {
		t.Fatalf("bob sees sessions %v", data)
	}
	for name, args := range map[string]map[string]any{
		"get_session_runs": {"session_id": sessionID},
		"run_agent":        {"agent_id": "echo", "message": "hijack", "session_id": sessionID},
		"cancel_run":       {"agent_id": "echo", "run_id": runID},
	} {
		r := callTool(t, bob, name, args)
		if !r.IsError || strings.Contains(resultText(r), "secret") {
			t.Fatalf("bob %s = %q (error %v), want a not-found error", name, resultText(r), r.IsError)
		}
	}
	r := callTool(t, bob, "get_session_runs", map[string]any{"session_id": sessionID, "run_id": runID})
	if !r.IsError {
		t.Fatalf("bob read alice's run: %q", resultText(r))
	}
	if n := countRunsOf(t, f, sessionID); n != 1 {
		t.Fatalf("alice's session has %d runs, want 1 (bob's run must not land in it)", n)
	}

	// Bob presenting Alice's MCP session id is not found (404, as an id
	// that does not exist), never forbidden.
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`
	for _, who := range []struct {
		token string
		want  int
	}{{rsToken(t, "bob"), http.StatusNotFound}, {rsToken(t, "alice"), http.StatusOK}} {
		resp := do(t, http.MethodPost, f.url+"/mcp", strings.NewReader(body), map[string]string{
			"Authorization": "Bearer " + who.token, "Mcp-Session-Id": alice.ID(), "Content-Type": "application/json",
			"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": alice.InitializeResult().ProtocolVersion})
		if resp.status != who.want {
			t.Fatalf("session reuse: status %d (%s), want %d", resp.status, resp.body, who.want)
		}
	}
}

func countRunsOf(t *testing.T, f *runsFixture, sessionID string) int {
	t.Helper()
	rows, _, err := f.db.GetRuns(context.Background(), dbRunFilter(sessionID))
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

func TestMCP_UnauthenticatedIs401(t *testing.T) {
	f := isolatedMCP(t, MCP{})
	resp := do(t, http.MethodPost, f.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`),
		map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
	if resp.status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", resp.status)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if _, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.url + "/mcp"}, nil); err == nil {
		t.Fatal("a client without a token connected")
	}
}

func TestMCP_ScopesPerTool(t *testing.T) {
	f := newRunsFixture(t, Config{Auth: Auth{Authenticator: rsaAuthenticator(t), Authorization: true}, UserIsolation: true,
		MCP: MCP{Enabled: true}})
	reader := mcpConnect(t, f.url, rsToken(t, "carol", "agents:read", "config:read", "sessions:read"), nil)
	r := callTool(t, reader, "run_agent", map[string]any{"agent_id": "echo", "message": "x"})
	if !r.IsError || !strings.Contains(resultText(r), "insufficient permissions") {
		t.Fatalf("run without agents:run = %q", resultText(r))
	}
	if r := callTool(t, reader, "get_sessions", nil); r.IsError {
		t.Fatalf("get_sessions with sessions:read: %q", resultText(r))
	}
	runner := mcpConnect(t, f.url, rsToken(t, "dave", "agents:echo:run"), nil)
	if r := callTool(t, runner, "run_agent", map[string]any{"agent_id": "echo", "message": "x"}); r.IsError {
		t.Fatalf("run with agents:echo:run: %q", resultText(r))
	}
	if r := callTool(t, runner, "run_agent", map[string]any{"agent_id": "nodb", "message": "x"}); !r.IsError {
		t.Fatal("agents:echo:run allowed running nodb")
	}
	for _, name := range []string{"get_sessions", "get_agentos_config"} {
		if r := callTool(t, runner, name, nil); !r.IsError {
			t.Fatalf("%s allowed without its scope", name)
		}
	}
	// get_agentos_config lists only what the caller may read.
	one := mcpConnect(t, f.url, rsToken(t, "erin", "config:read", "agents:echo:read"), nil)
	agents := structured(t, callTool(t, one, "get_agentos_config", nil))["agents"].([]any)
	if len(agents) != 1 || agents[0].(map[string]any)["id"] != "echo" {
		t.Fatalf("agents visible = %v", agents)
	}
}

func TestMCP_ProgressNotificationsForToolCalls(t *testing.T) {
	lookup := tool.MustFunc(tool.FuncConfig{Name: "lookup", Description: "Looks up."},
		func(context.Context, struct{}) (string, error) { return "found", nil })
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "lookup"}}}, {Content: "looked up"}}})
	a, err := agent.New(agent.Config{ID: "tooler", Model: m, Tools: []tool.Tool{lookup}})
	if err != nil {
		t.Fatal(err)
	}
	f := newRunsFixture(t, Config{Agents: []*agent.Agent{a}, MCP: MCP{Enabled: true}})
	var mu sync.Mutex
	var msgs []string
	cs := mcpConnect(t, f.url, "", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		msgs = append(msgs, r.Params.Message)
	}})
	params := &mcp.CallToolParams{Name: "run_agent", Arguments: map[string]any{"agent_id": "tooler", "message": "go"}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError || resultText(res) != "looked up" {
		t.Fatalf("run: %v %q", err, resultText(res))
	}
	eventually(t, "progress notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(msgs, "Tool call started: lookup") && slices.Contains(msgs, "Tool call completed: lookup")
	})
}

func TestMCP_ClientCancellationCancelsTheRun(t *testing.T) {
	f := newRunsFixture(t, Config{MCP: MCP{Enabled: true}})
	cs := mcpConnect(t, f.url, "", nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_agent", Arguments: map[string]any{"agent_id": "slow", "message": "wait"}})
		done <- err
	}()
	eventually(t, "the slow run to start", func() bool {
		f.srv.runs.mu.Lock()
		defer f.srv.runs.mu.Unlock()
		return len(f.srv.runs.flights) == 1
	})
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	eventually(t, "the run stored CANCELLED", func() bool {
		rows, _, err := f.db.GetRuns(context.Background(), dbAgentRuns("slow"))
		return err == nil && len(rows) == 1 && rows[0].Status == run.StatusCancelled
	})
}

func TestMCP_TagsUserToolsAndResultModes(t *testing.T) {
	echo := tool.MustFunc(tool.FuncConfig{Name: "shout", Description: "Upper-cases."},
		func(_ context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return strings.ToUpper(in.Text), nil
		})
	no := false
	cases := []struct {
		name string
		opts MCP
		want []string
	}{
		{"session only", MCP{Options: mcpOptions(nil, []string{"session"}, nil)}, []string{"get_memories", "get_session_runs", "get_sessions"}},
		{"exclude session", MCP{Options: mcpOptions(nil, nil, []string{"session"})},
			[]string{"cancel_run", "continue_run", "get_agentos_config", "run_agent", "run_team", "run_workflow"}},
		{"include none", MCP{Options: mcpOptions(nil, []string{}, nil)}, nil},
		{"builtins off, user tool", MCP{Options: mcpOptions(&no, nil, nil, echo)}, []string{"shout"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newRunsFixture(t, Config{MCP: MCP{Enabled: true, Options: c.opts.Options}})
			cs := mcpConnect(t, f.url, "", nil)
			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, c.want) {
				t.Fatalf("tools %v, want %v", names, c.want)
			}
			if slices.Contains(names, "shout") {
				if r := callTool(t, cs, "shout", map[string]any{"text": "hey"}); r.IsError || resultText(r) != "HEY" {
					t.Fatalf("shout = %q", resultText(r))
				}
				if r := callTool(t, cs, "shout", map[string]any{"text": 3}); !r.IsError {
					t.Fatalf("invalid arguments accepted: %q", resultText(r))
				}
			}
		})
	}
	t.Run("full and trimmed", func(t *testing.T) {
		full := newRunsFixture(t, Config{MCP: MCP{Enabled: true, Options: mcpResultMode("full", 0)}})
		st := structured(t, callTool(t, mcpConnect(t, full.url, "", nil), "run_agent", map[string]any{"agent_id": "echo", "message": "x"}))
		if st["content"] != "hi there" || st["agent_id"] != "echo" || st["messages"] == nil {
			t.Fatalf("full result = %v", st)
		}
		trimmed := newRunsFixture(t, Config{MCP: MCP{Enabled: true, Options: mcpResultMode("", 3)}})
		r := callTool(t, mcpConnect(t, trimmed.url, "", nil), "run_agent", map[string]any{"agent_id": "echo", "message": "x"})
		if txt := resultText(r); !strings.HasPrefix(txt, "hi \n[truncated") {
			t.Fatalf("trimmed text = %q", txt)
		}
		if st := structured(t, r); len(st) != 3 || st["status"] != "COMPLETED" {
			t.Fatalf("trimmed structured = %v", st)
		}
	})
}

func TestMCP_StatelessServesWithoutSessionIDs(t *testing.T) {
	f := newRunsFixture(t, Config{MCP: MCP{Enabled: true, Options: mcpStateless()}})
	cs := mcpConnect(t, f.url, "", nil)
	if cs.ID() != "" {
		t.Fatalf("stateless server gave session id %q", cs.ID())
	}
	if r := callTool(t, cs, "run_agent", map[string]any{"agent_id": "echo", "message": "x"}); r.IsError || resultText(r) != "hi there" {
		t.Fatalf("run = %q", resultText(r))
	}
}

func TestMCP_ContinuePausedRun(t *testing.T) {
	f := newRunsFixture(t, Config{MCP: MCP{Enabled: true}})
	cs := mcpConnect(t, f.url, "", nil)
	r := callTool(t, cs, "run_agent", map[string]any{"agent_id": "hitl", "message": "delete it"})
	st := structured(t, r)
	reqs, _ := st["requirements"].([]any)
	if st["status"] != "PAUSED" || len(reqs) != 1 {
		t.Fatalf("paused result = %v", st)
	}
	req := reqs[0].(map[string]any)
	req["tool_execution"].(map[string]any)["confirmed"] = true
	r = callTool(t, cs, "continue_run", map[string]any{"agent_id": "hitl", "run_id": st["run_id"], "session_id": st["session_id"],
		"requirements": []any{req}})
	if r.IsError || resultText(r) != "all done" || f.executed.Load() != 1 {
		t.Fatalf("continue = %q (executed %d)", resultText(r), f.executed.Load())
	}
}

func TestMCP_DisabledIs404(t *testing.T) {
	f := newRunsFixture(t, Config{})
	if resp := do(t, http.MethodPost, f.url+"/mcp", strings.NewReader("{}"), nil); resp.status != http.StatusNotFound {
		t.Fatalf("status %d, want 404", resp.status)
	}
}

func mcpOptions(builtins *bool, include, exclude []string, tools ...tool.Tool) mcpserver.Options {
	return mcpserver.Options{EnableBuiltinTools: builtins, IncludeTags: include, ExcludeTags: exclude, Tools: tools}
}

func mcpResultMode(mode string, maxBytes int) mcpserver.Options {
	return mcpserver.Options{ResultMode: mode, MaxResultBytes: maxBytes}
}

func mcpStateless() mcpserver.Options { return mcpserver.Options{Stateless: true} }

func dbRunFilter(sessionID string) db.RunFilter {
	return db.RunFilter{SessionID: sessionID, Limit: 100, Page: 1}
}

func dbAgentRuns(agentID string) db.RunFilter {
	return db.RunFilter{AgentID: agentID, Limit: 100, Page: 1}
}

func TestFromFile_MCPServerMountsMCP(t *testing.T) {
	file, err := config.Parse([]byte("mcp_server:\n  path: /tools/mcp\n  stateless: true\n"), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := FromFile(file)
	if err != nil || !cfg.MCP.Enabled || cfg.MCP.Path != "/tools/mcp" || !cfg.MCP.Options.Stateless {
		t.Fatalf("FromFile: %+v, %v", cfg.MCP, err)
	}
	f := newRunsFixture(t, cfg)
	if cs := mcpConnect2(t, f.url+"/tools/mcp"); cs == nil {
		t.Fatal("no session")
	}
}

func mcpConnect2(t *testing.T, endpoint string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestMCP_RunTeamAndWorkflowWithStepProgress(t *testing.T) {
	f := newTeamFixture(t, Config{MCP: MCP{Enabled: true}})
	var mu sync.Mutex
	var msgs []string
	var totals []float64
	cs := mcpConnect(t, f.url, "", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		msgs, totals = append(msgs, r.Params.Message), append(totals, r.Params.Total)
	}})
	r := callTool(t, cs, "run_team", map[string]any{"team_id": "crew", "message": "go"})
	if r.IsError || resultText(r) != "the team answer" || structured(t, r)["status"] != "COMPLETED" {
		t.Fatalf("run_team = %q %v", resultText(r), r.StructuredContent)
	}
	params := &mcp.CallToolParams{Name: "run_workflow", Arguments: map[string]any{"workflow_id": "pipeline", "message": "go"}}
	params.SetProgressToken(7)
	r, err := cs.CallTool(context.Background(), params)
	if err != nil || r.IsError || resultText(r) != "reviewed" {
		t.Fatalf("run_workflow = %v %q", err, resultText(r))
	}
	row, err := f.db.GetRun(context.Background(), structured(t, r)["run_id"].(string))
	if err != nil || row.WorkflowID != "pipeline" {
		t.Fatalf("stored workflow run %+v, %v", row, err)
	}
	eventually(t, "step progress", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(msgs, "Step draft completed") && slices.Contains(msgs, "Step review completed") && slices.Contains(totals, 2)
	})
	if r := callTool(t, cs, "run_team", map[string]any{"team_id": "nope", "message": "go"}); !r.IsError || !strings.Contains(resultText(r), "not found") {
		t.Fatalf("unknown team = %q", resultText(r))
	}
	if r := callTool(t, cs, "continue_run", map[string]any{"team_id": "crew", "run_id": "x"}); !r.IsError || !strings.Contains(resultText(r), "not found: run x") {
		t.Fatalf("continue an unknown team run = %q", resultText(r))
	}
	if r := callTool(t, cs, "continue_run", map[string]any{"workflow_id": "pipeline", "run_id": "x"}); !r.IsError || !strings.Contains(resultText(r), "only agent and team runs") {
		t.Fatalf("continue a workflow run = %q", resultText(r))
	}
	if r := callTool(t, cs, "cancel_run", map[string]any{"agent_id": "writer", "team_id": "crew", "run_id": "x"}); !r.IsError || !strings.Contains(resultText(r), "exactly one") {
		t.Fatalf("two owners = %q", resultText(r))
	}
	if r := callTool(t, cs, "get_sessions", map[string]any{"session_type": "chat"}); !r.IsError {
		t.Fatal("bad session_type accepted")
	}
}
