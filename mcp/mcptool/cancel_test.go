package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/mcp/mcptool"
)

// A run's call goes on while another run of the agent is listing the
// server's tools again (a slow tools/list after list_changed, bounded only
// by ConnectTimeout), and one whose context ended returns at once: every
// call waited for the listing to end, past its own cancellation.
func TestToolkit_CancelledCallDoesNotWaitForAListing(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "slowlist", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes text."}, func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
		return text("echo: " + in.Text), nil, nil
	})
	var block atomic.Bool
	entered, release := make(chan struct{}, 1), make(chan struct{})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && block.Load() {
				entered <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	// The listing is bounded by ConnectTimeout: far above the wait below.
	k := newKit(t, mcptool.Config{URL: ts.URL, ConnectTimeout: 10 * time.Minute})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	tools, err := k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	echo := find(t, tools, "echo")

	// The server gains a tool: it notifies list_changed, and the next run's
	// Tools lists again, which the server holds.
	block.Store(true)
	mcp.AddTool(s, &mcp.Tool{Name: "late", Description: "Added later."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text("late"), nil, nil
	})
	listed := make(chan error, 1)
	go func() {
		for {
			tools, err := k.Tools(context.Background())
			if err != nil || slices.Contains(names(tools), "late") {
				listed <- err
				return
			}
			runtime.Gosched()
		}
	}()
	<-entered

	// A call goes on (it needs the connection, not the list), and one whose
	// context has ended returns at once.
	type answer struct {
		out string
		err error
	}
	call := func(ctx context.Context) answer {
		done := make(chan answer, 1)
		go func() {
			out, err := echo.Call(ctx, json.RawMessage(`{"text":"x"}`))
			done <- answer{out, err}
		}()
		select {
		case a := <-done:
			return a
		case <-time.After(time.Minute): // a bound far above any load; the call returns at once
			t.Fatal("a call waited for another run's listing of the tools")
			return answer{}
		}
	}
	if a := call(context.Background()); a.err != nil || a.out != "echo: x" {
		t.Errorf("call during the listing = %q, %v", a.out, a.err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if a := call(ctx); !errors.Is(a.err, context.Canceled) {
		t.Errorf("cancelled call = %q, %v, want context.Canceled", a.out, a.err)
	}
	close(release)
	if err := <-listed; err != nil {
		t.Fatal(err)
	}
}
