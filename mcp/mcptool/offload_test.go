package mcptool_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/mcp/mcptool"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
)

// A 10 MB MCP result in an agent that offloads tool results: the toolkit
// caps it, the cap is still over the offload threshold, so the model and the
// stored run see an envelope and the capped text is readable from the store.
func TestToolkit_BigResultIsOffloaded(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	big := mcptool.Config{Name: "web", URL: httpServer(t, "").URL, Include: []string{"big"}, MaxOutputBytes: 200_000}
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{ID: "call-big", Name: "big", Args: map[string]any{"bytes": 10 << 20}}}},
		{Content: "read it"},
	}})
	a, err := agent.New(agent.Config{Model: m, DB: d, ToolProviders: []agent.ToolProvider{newKit(t, big)},
		OffloadToolResults: &offload.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.Run(context.Background(), run.Input{InputContent: "go"}, agent.WithSessionID("mcp-offload"),
		agent.WithRunID("mcp-offload-run"), agent.WithUserID("alice"))
	if err != nil || out.Status != run.StatusCompleted || len(out.Tools) != 1 {
		t.Fatalf("run: %v %+v", err, out)
	}
	res := out.Tools[0].Result
	id := offload.ResultID("mcp-offload", "mcp-offload-run", "call-big")
	if !strings.HasPrefix(res, `<result id="`+id+`" tool="big"`) || len(res) > 5000 {
		t.Fatalf("tool result in the run (%d bytes) is not an offload envelope: %.300q", len(res), res)
	}
	row, err := d.GetRun(context.Background(), "mcp-offload-run")
	if err != nil || len(row.RunData) > 100_000 {
		t.Fatalf("stored run: %d bytes, %v (the capped 200 KB result must not be inline)", len(row.RunData), err)
	}
}
