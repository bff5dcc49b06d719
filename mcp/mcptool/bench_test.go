package mcptool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/mcp/mcptool"
	"github.com/agentryhq/agentry/tool"
)

// BenchmarkToolCall measures one echo call: a native tool against the same
// tool behind an MCP server over stdio and over streamable HTTP (loopback).
// The difference is the MCP overhead per call.
func BenchmarkToolCall(b *testing.B) {
	args := json.RawMessage(`{"text":"hello"}`)
	native := tool.MustFunc(tool.FuncConfig{Name: "echo", Description: "Echoes text."},
		func(_ context.Context, in textIn) (string, error) { return "echo: " + in.Text, nil })
	run := func(b *testing.B, t tool.Tool) {
		b.ReportAllocs()
		for b.Loop() {
			if out, err := t.Call(context.Background(), args); err != nil || out != "echo: hello" {
				b.Fatalf("%q, %v", out, err)
			}
		}
	}
	b.Run("native", func(b *testing.B) { run(b, native) })
	for _, c := range []struct {
		name string
		cfg  func(*testing.B) mcptool.Config
	}{
		{"mcp_stdio", func(*testing.B) mcptool.Config { return stdioConfig() }},
		{"mcp_http", func(b *testing.B) mcptool.Config { return mcptool.Config{URL: httpServerB(b).URL} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			k, err := mcptool.New(c.cfg(b))
			if err != nil {
				b.Fatal(err)
			}
			defer k.Close()
			tools, err := k.Tools(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			for _, t := range tools {
				if t.Definition().Name == "echo" {
					run(b, t)
				}
			}
		})
	}
}
