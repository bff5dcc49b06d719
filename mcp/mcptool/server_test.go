package mcptool_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a stdio MCP server: with serverEnv set it
// serves testServer on stdin/stdout instead of running tests.
const serverEnv = "MCPTOOL_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) != "" {
		if err := testServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type textIn struct {
	Text string `json:"text"`
}

type sleepIn struct {
	MS int `json:"ms"`
}

type bigIn struct {
	Bytes int `json:"bytes"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// testServer has echo, sleep, big, fail, crash (exits the process mid-call),
// grow (adds the tool "late", which notifies list_changed), whoami and
// refuse (a JSON-RPC error); a resource
// note://hello; a prompt greet. MCPTOOL_BAD_SCHEMA adds a tool "bad" with a
// huge, recursive or deep schema.
func testServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes text."}, func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
		return text("echo: " + in.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleeps."}, func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(in.MS) * time.Millisecond):
			return text("slept"), nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Returns bytes."}, func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
		return text(strings.Repeat("x", in.Bytes)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fails."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("kaboom")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits the server."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "testserver: crashing on purpose")
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Adds the tool late."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: "late", Description: "Added later."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text("late answer"), nil, nil
		})
		return text("grown"), nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "note://hello", Name: "hello", MIMEType: "text/plain"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "note://hello", MIMEType: "text/plain", Text: "hello resource"}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets."}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	// whoami names the process and the session, to tell a kept connection
	// from a new one; refuse answers with a JSON-RPC error (as servers do for
	// a call they reject outright) instead of an error result.
	s.AddTool(&mcp.Tool{Name: "whoami", Description: "Names the server process and session.", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(fmt.Sprintf("pid %d session %q", os.Getpid(), req.Session.ID())), nil
		})
	s.AddTool(&mcp.Tool{Name: "refuse", Description: "Refuses every call.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no such widget"}
		})
	if os.Getenv("MCPTOOL_ENV_TOOL") != "" {
		// getenv reads the server's environment.
		mcp.AddTool(s, &mcp.Tool{Name: "getenv", Description: "Reads a variable of the server's environment."}, func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			v, ok := os.LookupEnv(in.Text)
			return text(fmt.Sprintf("%v %q", ok, v)), nil, nil
		})
	}
	if kind := os.Getenv("MCPTOOL_BAD_SCHEMA"); kind != "" {
		s.AddTool(&mcp.Tool{Name: "bad", Description: "Bad schema.", InputSchema: badSchema(kind)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("bad"), nil })
	}
	return s
}

func badSchema(kind string) map[string]any {
	switch kind {
	case "huge":
		props := map[string]any{}
		for i := range 5000 {
			props[fmt.Sprintf("field_%04d", i)] = map[string]any{"type": "string", "description": strings.Repeat("d", 40)}
		}
		return map[string]any{"type": "object", "properties": props}
	case "recursive":
		return map[string]any{"type": "object", "properties": map[string]any{"node": map[string]any{"$ref": "#/$defs/Node"}},
			"$defs": map[string]any{"Node": map[string]any{"type": "object", "properties": map[string]any{
				"child": map[string]any{"$ref": "#/$defs/Node"}}}}}
	case "deep":
		s := map[string]any{"type": "string"}
		for range 60 {
			s = map[string]any{"type": "object", "properties": map[string]any{"x": s}}
		}
		return s
	}
	panic(kind)
}

// httpServer serves testServer over streamable HTTP, requiring token when
// it is not empty.
func httpServer(t testing.TB, token string) *httptest.Server {
	t.Helper()
	s := testServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func httpServerB(b *testing.B) *httptest.Server { return httpServer(b, "") }
