package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/mcp/mcptool"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// stdioConfig starts this test binary as the stdio server.
func stdioConfig(env ...string) mcptool.Config {
	e := map[string]string{"MCPTOOL_TEST_SERVER": "1"}
	for i := 0; i+1 < len(env); i += 2 {
		e[env[i]] = env[i+1]
	}
	return mcptool.Config{Name: "stdio", Command: os.Args[0], Env: e}
}

func newKit(t *testing.T, cfg mcptool.Config) *mcptool.Toolkit {
	t.Helper()
	k, err := mcptool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	return k
}

func transports(t *testing.T) map[string]mcptool.Config {
	return map[string]mcptool.Config{
		"stdio": stdioConfig(),
		"http":  {Name: "http", URL: httpServer(t, "").URL},
	}
}

func names(tools []tool.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Definition().Name)
	}
	slices.Sort(out)
	return out
}

func find(t *testing.T, tools []tool.Tool, name string) tool.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Definition().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s in %v", name, names(tools))
	return nil
}

func TestToolkit_ListsAndCallsToolsOverStdioAndHTTP(t *testing.T) {
	for name, cfg := range transports(t) {
		t.Run(name, func(t *testing.T) {
			k := newKit(t, cfg)
			tools, err := k.Tools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"big", "crash", "echo", "fail", "grow", name + "_read_resource", "refuse", "sleep", "whoami"}
			slices.Sort(want)
			if got := names(tools); !slices.Equal(got, want) {
				t.Fatalf("tools %v, want %v", got, want)
			}
			out, err := find(t, tools, "echo").Call(context.Background(), json.RawMessage(`{"text":"hi"}`))
			if err != nil || out != "echo: hi" {
				t.Fatalf("echo = %q, %v", out, err)
			}
			if _, err := find(t, tools, "fail").Call(context.Background(), nil); !errors.Is(err, mcptool.ErrToolFailed) || !strings.Contains(err.Error(), "kaboom") {
				t.Fatalf("fail = %v", err)
			}
			out, err = find(t, tools, name+"_read_resource").Call(context.Background(), json.RawMessage(`{"uri":"note://hello"}`))
			if err != nil || out != "hello resource" {
				t.Fatalf("read_resource = %q, %v", out, err)
			}
			prompts, err := k.Prompts(context.Background())
			if err != nil || len(prompts) != 1 || prompts[0].Name != "greet" {
				t.Fatalf("prompts %v, %v", prompts, err)
			}
			res, err := k.Resources(context.Background())
			if err != nil || len(res) != 1 || res[0].URI != "note://hello" {
				t.Fatalf("resources %v, %v", res, err)
			}
		})
	}
}

func TestToolkit_IncludeExcludeAndPrefix(t *testing.T) {
	url := httpServer(t, "").URL
	k := newKit(t, mcptool.Config{URL: url, Include: []string{"echo", "sleep"}, Exclude: []string{"sleep"}, Prefix: "web_"})
	tools, err := k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tools); !slices.Equal(got, []string{"web_127_0_0_1_read_resource", "web_echo"}) {
		t.Fatalf("tools %v", got)
	}
	if out, err := tools[0].Call(context.Background(), json.RawMessage(`{"text":"x"}`)); err != nil || out != "echo: x" {
		t.Fatalf("prefixed call = %q, %v", out, err)
	}
	k = newKit(t, mcptool.Config{URL: url, Include: []string{"nope"}})
	if _, err := k.Tools(context.Background()); err == nil || !strings.Contains(err.Error(), `no tool "nope"`) {
		t.Fatalf("unknown include: %v", err)
	}
}

func TestToolkit_SeveralServersInOneAgentRun(t *testing.T) {
	stdio := newKit(t, stdioConfig())
	web := newKit(t, mcptool.Config{URL: httpServer(t, "").URL, Prefix: "web_", Include: []string{"echo"}})
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "echo", Args: map[string]any{"text": "a"}}, {Name: "web_echo", Args: map[string]any{"text": "b"}}}},
		{Content: "both answered"},
	}})
	a, err := agent.New(agent.Config{Model: m, ToolProviders: []agent.ToolProvider{stdio, web}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.Run(context.Background(), run.Input{InputContent: "go"})
	if err != nil || out.Status != run.StatusCompleted || len(out.Tools) != 2 {
		t.Fatalf("run: %v %+v", err, out)
	}
	got := []string{out.Tools[0].Result, out.Tools[1].Result}
	slices.Sort(got)
	if !slices.Equal(got, []string{"echo: a", "echo: b"}) {
		t.Fatalf("results %v", got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdio.Tools(context.Background()); !errors.Is(err, mcptool.ErrUnavailable) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestToolkit_TimeoutIsAToolError(t *testing.T) {
	for name, cfg := range transports(t) {
		t.Run(name, func(t *testing.T) {
			cfg.Timeout = 200 * time.Millisecond
			k := newKit(t, cfg)
			tools, err := k.Tools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = find(t, tools, "sleep").Call(context.Background(), json.RawMessage(`{"ms":20000}`))
			if !errors.Is(err, tool.ErrTimeout) || time.Since(start) > 5*time.Second {
				t.Fatalf("sleep: %v after %s", err, time.Since(start))
			}
			// The connection survives a timed-out call.
			if out, err := find(t, tools, "echo").Call(context.Background(), json.RawMessage(`{"text":"still"}`)); err != nil || out != "echo: still" {
				t.Fatalf("after timeout: %q, %v", out, err)
			}
		})
	}
}

// A JSON-RPC error answer (a call the server refuses, a resource it does not
// have) is the server's answer on a live session: the model sees it as a
// failed call, and the session (with a stdio server, its process and state)
// is kept. Before, it read as "mcp server unavailable" and the session was
// closed, killing and restarting a stdio server.
func TestToolkit_JSONRPCErrorAnswerKeepsTheSession(t *testing.T) {
	for name, cfg := range transports(t) {
		t.Run(name, func(t *testing.T) {
			k := newKit(t, cfg)
			ctx := context.Background()
			tools, err := k.Tools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			whoami := func() string {
				t.Helper()
				out, err := find(t, tools, "whoami").Call(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			before := whoami()
			_, err = find(t, tools, "refuse").Call(ctx, nil)
			if !errors.Is(err, mcptool.ErrToolFailed) || errors.Is(err, mcptool.ErrUnavailable) || !strings.Contains(err.Error(), "no such widget") {
				t.Fatalf("refuse = %v, want ErrToolFailed with the server's message", err)
			}
			_, err = find(t, tools, name+"_read_resource").Call(ctx, json.RawMessage(`{"uri":"note://missing"}`))
			if !errors.Is(err, mcptool.ErrToolFailed) || errors.Is(err, mcptool.ErrUnavailable) {
				t.Fatalf("read of a missing resource = %v, want ErrToolFailed", err)
			}
			if after := whoami(); after != before {
				t.Fatalf("the session was replaced: %s, then %s", before, after)
			}
		})
	}
}

func TestToolkit_ServerCrashMidCallIsAClearErrorNotAHang(t *testing.T) {
	k := newKit(t, stdioConfig())
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "crash"}}}, {Content: "the server died"},
	}})
	a, err := agent.New(agent.Config{Model: m, ToolProviders: []agent.ToolProvider{k}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := a.Run(ctx, run.Input{InputContent: "go"})
	if err != nil || out.Status != run.StatusCompleted || len(out.Tools) != 1 {
		t.Fatalf("run: %v %+v", err, out)
	}
	te := out.Tools[0]
	if !te.ToolCallError || !strings.Contains(te.Result, "mcp server unavailable") || !strings.Contains(te.Result, "crashing on purpose") {
		t.Fatalf("tool result %q (error %v)", te.Result, te.ToolCallError)
	}
	// The next use starts the server again.
	tools, err := k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := find(t, tools, "echo").Call(context.Background(), json.RawMessage(`{"text":"back"}`)); err != nil || out != "echo: back" {
		t.Fatalf("after restart: %q, %v", out, err)
	}
}

func TestToolkit_DeadServers(t *testing.T) {
	k := newKit(t, mcptool.Config{Command: "/nonexistent/mcp-server"})
	if _, err := k.Tools(context.Background()); !errors.Is(err, mcptool.ErrUnavailable) {
		t.Fatalf("missing command: %v", err)
	}
	ts := httpServer(t, "")
	k = newKit(t, mcptool.Config{URL: ts.URL, Timeout: 5 * time.Second})
	tools, err := k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ts.CloseClientConnections()
	ts.Close()
	start := time.Now()
	_, err = find(t, tools, "echo").Call(context.Background(), json.RawMessage(`{"text":"x"}`))
	if !errors.Is(err, mcptool.ErrUnavailable) || time.Since(start) > 4*time.Second {
		t.Fatalf("call to a stopped server: %v after %s", err, time.Since(start))
	}
}

func TestToolkit_TenMegabyteResultIsCapped(t *testing.T) {
	for name, cfg := range transports(t) {
		t.Run(name, func(t *testing.T) {
			cfg.MaxOutputBytes = 32 << 10
			// 10 MB through the transport under -race on a loaded two-core
			// machine took over the default minute; the test is about the cap.
			cfg.Timeout = 5 * time.Minute
			k := newKit(t, cfg)
			tools, err := k.Tools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			out, err := find(t, tools, "big").Call(context.Background(), json.RawMessage(`{"bytes":10485760}`))
			if err != nil {
				t.Fatal(err)
			}
			if len(out) > 33<<10 || !strings.HasPrefix(out, "xxx") || !strings.Contains(out, "[output truncated: 32768 of 10485760 bytes shown]") {
				t.Fatalf("len %d, tail %q", len(out), out[max(0, len(out)-80):])
			}
		})
	}
}

func TestToolkit_MaliciousSchemasAreClearErrors(t *testing.T) {
	for _, kind := range []string{"huge", "recursive", "deep"} {
		t.Run(kind, func(t *testing.T) {
			k := newKit(t, stdioConfig("MCPTOOL_BAD_SCHEMA", kind))
			_, err := k.Tools(context.Background())
			if !errors.Is(err, mcptool.ErrBadSchema) || !strings.Contains(err.Error(), `tool "bad"`) || !strings.Contains(err.Error(), "exclude") {
				t.Fatalf("error %v", err)
			}
			cfg := stdioConfig("MCPTOOL_BAD_SCHEMA", kind)
			cfg.Exclude = []string{"bad"}
			tools, err := newKit(t, cfg).Tools(context.Background())
			if err != nil || len(tools) == 0 {
				t.Fatalf("excluding the bad tool: %v", err)
			}
		})
	}
}

func TestToolkit_RefreshesAfterListChanged(t *testing.T) {
	for name, cfg := range transports(t) {
		t.Run(name, func(t *testing.T) {
			k := newKit(t, cfg)
			tools, err := k.Tools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := find(t, tools, "grow").Call(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				tools, err = k.Tools(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if slices.Contains(names(tools), "late") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("late never listed: %v", names(tools))
				}
				time.Sleep(20 * time.Millisecond)
			}
			if out, err := find(t, tools, "late").Call(context.Background(), nil); err != nil || out != "late answer" {
				t.Fatalf("late = %q, %v", out, err)
			}
		})
	}
}

func TestToolkit_BearerTokenAndHeaders(t *testing.T) {
	ts := httpServer(t, "s3cret")
	if _, err := newKit(t, mcptool.Config{URL: ts.URL}).Tools(context.Background()); !errors.Is(err, mcptool.ErrUnavailable) {
		t.Fatalf("without token: %v", err)
	}
	if _, err := newKit(t, mcptool.Config{URL: ts.URL, BearerToken: "s3cret"}).Tools(context.Background()); err != nil {
		t.Fatalf("bearer: %v", err)
	}
	if _, err := newKit(t, mcptool.Config{URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}}).Tools(context.Background()); err != nil {
		t.Fatalf("headers: %v", err)
	}
}

func TestNew_RefusesBadConfigs(t *testing.T) {
	for _, c := range []mcptool.Config{
		{},
		{Command: "x", URL: "http://h/mcp"},
		{URL: "ftp://h/mcp"},
		{URL: "not a url"},
		{Command: "x", BearerToken: "t"},
		{Command: "x", Timeout: -1},
	} {
		if _, err := mcptool.New(c); !errors.Is(err, mcptool.ErrConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

func TestToolkit_ConcurrentFirstUseAndCalls(t *testing.T) {
	k := newKit(t, mcptool.Config{URL: httpServer(t, "").URL})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			tools, err := k.Tools(context.Background())
			if err != nil {
				errs <- err
				return
			}
			for _, tl := range tools {
				if tl.Definition().Name == "echo" {
					want := fmt.Sprintf("echo: %d", i)
					out, err := tl.Call(context.Background(), json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, i)))
					if err != nil || out != want {
						errs <- fmt.Errorf("call %d: %q, %v", i, out, err)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A restarted HTTP server no longer knows the session (it answers 404 for
// it, without running the call): the call opens a new session and runs on
// it, as MCP says a client must. The first call after a restart failed.
func TestToolkit_ReconnectsAfterHTTPServerRestart(t *testing.T) {
	var current atomic.Pointer[http.Handler]
	fresh := func() {
		s := testServer()
		var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
		current.Store(&h)
	}
	fresh()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	k := newKit(t, mcptool.Config{URL: ts.URL})
	tools, err := k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	echo := find(t, tools, "echo")
	for i := range 2 {
		fresh() // the server restarts: its sessions are gone
		if out, err := echo.Call(context.Background(), json.RawMessage(`{"text":"x"}`)); err != nil || out != "echo: x" {
			t.Fatalf("restart %d: call on a forgotten session: %q, %v", i+1, out, err)
		}
	}
	if out, err := echo.Call(context.Background(), json.RawMessage(`{"text":"again"}`)); err != nil || out != "echo: again" {
		t.Fatalf("after reconnect: %q, %v", out, err)
	}
}

// Inside an agent run: a slow tool times out as a tool error (the run goes
// on), a huge result reaches the model capped, and a server with a malicious
// schema stops the run before it starts, naming the tool.
func TestToolkit_InsideAgentRuns(t *testing.T) {
	slow := stdioConfig()
	slow.Include, slow.Timeout = []string{"sleep"}, 300*time.Millisecond
	big := mcptool.Config{Name: "web", URL: httpServer(t, "").URL, Include: []string{"big"}, MaxOutputBytes: 1000}
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "sleep", Args: map[string]any{"ms": 600000}}, {Name: "big", Args: map[string]any{"bytes": 10 << 20}}}},
		{Content: "carried on"},
	}})
	a, err := agent.New(agent.Config{Model: m, ToolProviders: []agent.ToolProvider{newKit(t, slow), newKit(t, big)}})
	if err != nil {
		t.Fatal(err)
	}
	// The tool sleeps ten minutes: without its 300 ms timeout the run would
	// still be waiting when this bound (far above any load's slowness) ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := a.Run(ctx, run.Input{InputContent: "go"})
	if err != nil || out.Status != run.StatusCompleted || out.ContentString() != "carried on" || len(out.Tools) != 2 {
		t.Fatalf("run (a tool with a 300ms timeout must not hold it): %v %+v", err, out)
	}
	for _, te := range out.Tools {
		switch te.ToolName {
		case "sleep":
			if !te.ToolCallError || !strings.Contains(te.Result, "timed out") {
				t.Fatalf("sleep result %q", te.Result)
			}
		case "big":
			if te.ToolCallError || len(te.Result) > 1100 || !strings.Contains(te.Result, "of 10485760 bytes shown") {
				t.Fatalf("big result: %d bytes, error %v: %q", len(te.Result), te.ToolCallError, te.Result)
			}
		}
	}
	bad := newKit(t, stdioConfig("MCPTOOL_BAD_SCHEMA", "recursive"))
	a, err = agent.New(agent.Config{Model: scripted.Reply("never"), ToolProviders: []agent.ToolProvider{bad}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), run.Input{InputContent: "go"}); !errors.Is(err, mcptool.ErrBadSchema) || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("run with a recursive schema: %v", err)
	}
}
