package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// listProvider hands out its current tools; closed counts Close calls.
type listProvider struct {
	tools  atomic.Pointer[[]tool.Tool]
	err    error
	closed atomic.Int32
}

func (p *listProvider) Tools(context.Context) ([]tool.Tool, error) {
	if p.err != nil {
		return nil, p.err
	}
	return *p.tools.Load(), nil
}

func (p *listProvider) Close() error { p.closed.Add(1); return nil }

func named(name, answer string) tool.Tool {
	return tool.MustFunc(tool.FuncConfig{Name: name, Description: name},
		func(context.Context, struct{}) (string, error) { return answer, nil })
}

func TestToolProviders_ToolsAreListedEveryRun(t *testing.T) {
	p := &listProvider{}
	p.tools.Store(&[]tool.Tool{named("dyn", "one")})
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "dyn"}}}, {Content: "done"},
	}})
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{named("static", "s")}, ToolProviders: []agent.ToolProvider{p}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.Run(context.Background(), run.Input{InputContent: "go"})
	if err != nil || out.Status != run.StatusCompleted || len(out.Tools) != 1 || out.Tools[0].Result != "one" {
		t.Fatalf("first run: %v %+v", err, out)
	}
	p.tools.Store(&[]tool.Tool{named("dyn", "two")})
	out, err = a.Run(context.Background(), run.Input{InputContent: "go"})
	if err != nil || len(out.Tools) != 1 || out.Tools[0].Result != "two" || out.Tools[0].ToolCallError {
		t.Fatalf("second run (tools refreshed): %v %+v", err, out.Tools)
	}
	if err := a.Close(); err != nil || p.closed.Load() != 1 {
		t.Fatalf("close: %v, closed %d", err, p.closed.Load())
	}
}

func TestToolProviders_ErrorStopsTheRunWithIt(t *testing.T) {
	boom := errors.New("mcp server docs: connect: executable not found")
	a, err := agent.New(agent.Config{Model: scripted.Reply("hi"), ToolProviders: []agent.ToolProvider{&listProvider{err: boom}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), run.Input{InputContent: "go"}); !errors.Is(err, boom) {
		t.Fatalf("run error %v, want %v", err, boom)
	}
	dup := &listProvider{}
	dup.tools.Store(&[]tool.Tool{named("static", "x")})
	a, _ = agent.New(agent.Config{Model: scripted.Reply("hi"), Tools: []tool.Tool{named("static", "s")}, ToolProviders: []agent.ToolProvider{dup}})
	if _, err := a.Run(context.Background(), run.Input{InputContent: "go"}); err == nil || !strings.Contains(err.Error(), "duplicate tool name") {
		t.Fatalf("duplicate names: %v", err)
	}
	if _, err := agent.New(agent.Config{Model: scripted.Reply("hi"), ToolProviders: []agent.ToolProvider{nil}}); err == nil {
		t.Fatal("nil provider accepted")
	}
}

func TestToolProviders_ToolHooksWrapProviderTools(t *testing.T) {
	p := &listProvider{}
	p.tools.Store(&[]tool.Tool{named("dyn", "raw")})
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{{Name: "dyn"}}}, {Content: "done"}}})
	hook := func(next agent.ToolHandler) agent.ToolHandler {
		return func(ctx context.Context, call model.ToolCall) tool.Result {
			r := next(ctx, call)
			r.Content = "hooked " + r.Content
			return r
		}
	}
	a, err := agent.New(agent.Config{Model: m, ToolProviders: []agent.ToolProvider{p}, ToolHooks: []agent.ToolHook{hook}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.Run(context.Background(), run.Input{InputContent: "go"})
	if err != nil || len(out.Tools) != 1 || out.Tools[0].Result != "hooked raw" {
		t.Fatalf("run: %v %+v", err, out)
	}
}
