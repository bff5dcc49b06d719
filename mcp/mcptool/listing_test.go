package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/mcp/mcptool"
	"github.com/agentryhq/agentry/tool"
)

// pagingServer serves testServer, except that every page of a listing
// (tools, resources, prompts) it answers has 500 items and a next cursor:
// the same one each time when repeat is set, a new one otherwise.
func pagingServer(t *testing.T, repeat bool) *httptest.Server {
	var page atomic.Int64
	return intercepting(t, func(method string) (string, bool) {
		item, ok := map[string]string{
			"tools/list":     `{"name":"t%d_%d","inputSchema":{"type":"object"}}`,
			"resources/list": `{"uri":"note://%d/%d","name":"r"}`,
			"prompts/list":   `{"name":"p%d_%d"}`,
		}[method]
		if !ok {
			return "", false
		}
		n := page.Add(1)
		cursor := fmt.Sprintf("page-%d", n)
		if repeat {
			cursor = "again"
		}
		var items []string
		for i := range 500 {
			items = append(items, fmt.Sprintf(item, n, i))
		}
		return fmt.Sprintf(`{%q:[%s],"nextCursor":%q}`, strings.TrimSuffix(method, "/list"), strings.Join(items, ","), cursor), true
	})
}

// A server whose listing never ends (a cursor it gives again, or new
// cursors without end) fails the listing with a clear error: the toolkit
// followed the cursors until the listing's time ran out (30 s by default,
// at every run) and held every page read meanwhile; prompts and resources
// had no time limit at all.
func TestToolkit_EndlessListingsAreClearErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		repeat bool
		want   string
	}{
		{"RepeatedCursor", true, "cursor"},
		{"CursorsWithoutEnd", false, "more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			k := newKit(t, mcptool.Config{URL: pagingServer(t, c.repeat).URL, ConnectTimeout: 10 * time.Minute})
			ctx := context.Background()
			_, terr := k.Tools(ctx)
			_, rerr := k.Resources(ctx)
			_, perr := k.Prompts(ctx)
			for what, err := range map[string]error{"tools": terr, "resources": rerr, "prompts": perr} {
				if !errors.Is(err, mcptool.ErrUnavailable) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("listing %s: %v, want ErrUnavailable saying %q", what, err, c.want)
				}
			}
		})
	}
}

// answering serves testServer, except that the methods in answers are
// answered with the given result.
func answering(t *testing.T, answers map[string]string) *httptest.Server {
	return intercepting(t, func(method string) (string, bool) {
		result, ok := answers[method]
		return result, ok
	})
}

// intercepting serves testServer, except that a request whose method
// answer takes (ok) is answered with its result.
func intercepting(t *testing.T, answer func(method string) (result string, ok bool)) *httptest.Server {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		result, ok := answer(req.Method)
		if !ok {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// A listing that names a tool twice, names one "", or has a tool named as
// the toolkit's resource tool still gives the agent tools of distinct,
// non-empty names (the first of a name twice listed; the server could not
// tell the two apart), so its runs go on: the tool set refused the
// duplicate or empty name and every run of the agent failed.
func TestToolkit_ListedNamesBecomeDistinctToolNames(t *testing.T) {
	ts := answering(t, map[string]string{"tools/list": `{"tools":[{"name":"echo","description":"first","inputSchema":{"type":"object"}},
		{"name":"echo","description":"second","inputSchema":{"type":"object"}},
		{"name":"","inputSchema":{"type":"object"}},
		{"name":"srv_read_resource","inputSchema":{"type":"object"}}]}`})
	k := newKit(t, mcptool.Config{Name: "srv", URL: ts.URL})
	tools, err := k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tool.NewSet(tools); err != nil {
		t.Fatalf("tools %v: %v", names(tools), err)
	}
	if len(tools) != 4 {
		t.Fatalf("tools %v: want echo, the unnamed one, srv_read_resource and the resource tool", names(tools))
	}
	if d := find(t, tools, "echo").Definition(); d.Description != "first" {
		t.Fatalf("echo is %q, want the first listed", d.Description)
	}
	if out, err := find(t, tools, "echo").Call(context.Background(), json.RawMessage(`{"text":"x"}`)); err != nil || out != "echo: x" {
		t.Fatalf("echo: %q, %v", out, err)
	}
	// srv_read_resource is the server's tool (a call reaches the server,
	// which has none by that name); the resource tool took another name.
	if _, err := find(t, tools, "srv_read_resource").Call(context.Background(), json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "srv_read_resource") {
		t.Fatalf("srv_read_resource: %v, want the server's answer about its tool", err)
	}
}
