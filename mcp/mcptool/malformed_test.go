package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/mcp/mcptool"
)

// A server whose answers hold null among a resource's contents or in a
// listing gets the rest read: the resource tool dereferenced the null and
// panicked in the agent's process, and Resources and Prompts handed the
// nulls to their caller.
func TestToolkit_NullsInAnswersAreSkipped(t *testing.T) {
	ts := answering(t, map[string]string{
		"resources/read": `{"contents":[null,{"uri":"note://hello","text":"hi"},null]}`,
		"resources/list": `{"resources":[null,{"uri":"note://hello","name":"hello"}]}`,
		"prompts/list":   `{"prompts":[{"name":"greet"},null]}`,
	})
	k := newKit(t, mcptool.Config{Name: "srv", URL: ts.URL})
	tools, err := k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rs, err := k.Resources(context.Background())
	if err != nil || len(rs) != 1 || rs[0] == nil || rs[0].Name != "hello" {
		t.Fatalf("resources %v, %v", rs, err)
	}
	ps, err := k.Prompts(context.Background())
	if err != nil || len(ps) != 1 || ps[0] == nil || ps[0].Name != "greet" {
		t.Fatalf("prompts %v, %v", ps, err)
	}
	out, err := find(t, tools, "srv_read_resource").Call(context.Background(), json.RawMessage(`{"uri":"note://hello"}`))
	if err != nil || out != "hi" {
		t.Fatalf("read: %q, %v", out, err)
	}
}

// A tool result that is not MCP (content of an unknown type, content that
// is not a list) fails that call and keeps the session: the toolkit took
// it for a lost connection and dropped the session, so a stdio server was
// restarted and any state it held for the agent (a browser, an open
// file) was lost. The server is asked to initialize once.
func TestToolkit_AMalformedResultKeepsTheSession(t *testing.T) {
	var inits, calls atomic.Int32
	bad := []string{`{"content":[{"type":"hologram","text":"x"}]}`, `{"content":"not a list"}`, `{"content":[null]}`}
	ts := intercepting(t, func(method string) (string, bool) {
		switch method {
		case "initialize":
			inits.Add(1)
		case "tools/call":
			if n := int(calls.Add(1)); n <= len(bad) {
				return bad[n-1], true
			}
		}
		return "", false
	})
	k := newKit(t, mcptool.Config{Name: "srv", URL: ts.URL})
	tools, err := k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	echo := find(t, tools, "echo")
	for range bad {
		_, err := echo.Call(context.Background(), json.RawMessage(`{"text":"hi"}`))
		if !errors.Is(err, mcptool.ErrToolFailed) || !strings.Contains(err.Error(), "not a valid MCP result") {
			t.Fatalf("malformed result: %v, want ErrToolFailed saying the result is not valid", err)
		}
	}
	if out, err := echo.Call(context.Background(), json.RawMessage(`{"text":"hi"}`)); err != nil || out != "echo: hi" {
		t.Fatalf("after: %q, %v", out, err)
	}
	if n := inits.Load(); n != 1 {
		t.Errorf("the server was initialized %d times, want once (the session kept)", n)
	}
}
