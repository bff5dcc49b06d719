package mcptool_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/mcp/mcptool"
)

// providerName is what every model provider accepts as a function name.
var providerName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// namedServer serves tools that answer with their own (server) name.
func namedServer(t *testing.T, toolNames ...string) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "named", Version: "1"}, nil)
	for _, n := range toolNames {
		s.AddTool(&mcp.Tool{Name: n, Description: "Names itself.", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text(n), nil })
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// MCP allows tool names of up to 128 letters, digits, '_', '-' and '.'
// ("github.create_issue"); model providers refuse a function name outside
// ^[A-Za-z0-9_-]{1,64}$, failing every turn of the agent. The model sees a
// name it accepts, distinct per tool, and a call reaches the server's tool.
func TestToolkit_ToolNamesAreOnesProvidersAccept(t *testing.T) {
	long := strings.Repeat("a", 100)
	serverNames := []string{"files.read", "files_read", "files-write", long, long + "b", "x.y.z"}
	k := newKit(t, mcptool.Config{Name: "named", URL: namedServer(t, serverNames...), Prefix: "gh_"})
	tools, err := k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != len(serverNames) {
		t.Fatalf("tools %v, want %d", names(tools), len(serverNames))
	}
	seen := map[string]bool{}
	answered := map[string]bool{}
	for _, tl := range tools {
		n := tl.Definition().Name
		if !providerName.MatchString(n) {
			t.Errorf("tool name %q is refused by model providers", n)
		}
		if !strings.HasPrefix(n, "gh_") {
			t.Errorf("tool name %q lost the prefix", n)
		}
		if seen[n] {
			t.Errorf("tool name %q given twice", n)
		}
		seen[n] = true
		out, err := tl.Call(context.Background(), nil)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		answered[out] = true
	}
	for _, n := range serverNames {
		if !answered[n] {
			t.Errorf("server tool %q was not reached through any name (reached %v)", n, answered)
		}
	}
	// Names that providers accept are kept as the server gives them.
	if !seen["gh_files_read"] || !seen["gh_files-write"] {
		t.Errorf("valid names were changed: %v", names(tools))
	}
}

// A prefix providers would refuse is a configuration error, and a long
// server name still gives a read_resource tool name providers accept.
func TestNew_PrefixMustBeAProviderName(t *testing.T) {
	for _, p := range []string{"gh.", "a b", "ü_"} {
		if _, err := mcptool.New(mcptool.Config{URL: "http://127.0.0.1:1/mcp", Prefix: p}); !errors.Is(err, mcptool.ErrConfig) {
			t.Errorf("prefix %q: %v, want ErrConfig", p, err)
		}
	}
	k := newKit(t, mcptool.Config{Name: strings.Repeat("s", 80), URL: httpServer(t, "").URL})
	tools, err := k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if n := tl.Definition().Name; !providerName.MatchString(n) {
			t.Errorf("tool name %q is refused by model providers", n)
		}
	}
}

// A server without tools is listed once, as any other: the empty list is
// cached until the server says it changed (every run listed it again).
func TestToolkit_EmptyToolListIsCached(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "empty", Version: "1"}, nil)
	var lists atomic.Int32
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	k := newKit(t, mcptool.Config{URL: ts.URL})
	for range 3 {
		tools, err := k.Tools(context.Background())
		if err != nil || len(tools) != 0 {
			t.Fatalf("tools %v, %v", names(tools), err)
		}
	}
	if n := lists.Load(); n != 1 {
		t.Fatalf("tools/list sent %d times for 3 runs, want 1", n)
	}
}
