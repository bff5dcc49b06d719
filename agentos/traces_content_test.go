package agentos

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentryhq/agentry/trace"
)

// spansNamed are the exported spans called name.
func spansNamed(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func spanAttr(s tracetest.SpanStub, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String(), true
		}
	}
	return "", false
}

// mcpRunAs runs calc through the MCP endpoint as user and returns the run
// id, once its spans are stored.
func (f traceFixture) mcpRunAs(t *testing.T, user, message string) string {
	t.Helper()
	cs := mcpConnect(t, f.url, f.tokens[user], nil)
	res := callTool(t, cs, "run_agent", map[string]any{"agent_id": "calc", "message": message})
	if res.IsError || resultText(res) != "42" {
		t.Fatalf("run_agent as %s = %q", user, resultText(res))
	}
	runID, _ := structured(t, res)["run_id"].(string)
	if err := f.tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return runID
}

// TestMCP_RunsAreTracedForTheCaller: a run started through the MCP endpoint
// gets the run span (with its model and tool spans as children) the HTTP
// routes' runs get, exported and stored, carrying the caller's user: the
// caller reads it through /traces, another user gets 404.
func TestMCP_RunsAreTracedForTheCaller(t *testing.T) {
	t.Parallel()
	f := newTraceFixtureWith(t, trace.Content{})
	runID := f.mcpRunAs(t, "alice", "6*7 please")

	roots := spansNamed(f.exported, "invoke_agent Calculator")
	if len(roots) != 1 {
		t.Fatalf("exported run spans: %d of %d spans", len(roots), len(f.exported.GetSpans()))
	}
	root := roots[0]
	for key, want := range map[string]string{"agentry.run.id": runID, "agentry.user.id": "alice", "input.value": "6*7 please", "output.value": "42"} {
		if got, _ := spanAttr(root, key); got != want {
			t.Errorf("run span %s = %q, want %q", key, got, want)
		}
	}
	for _, name := range []string{"chat calc-model", "execute_tool multiply"} {
		kids := spansNamed(f.exported, name)
		if len(kids) == 0 {
			t.Fatalf("no %s span", name)
		}
		for _, k := range kids {
			if k.SpanContext.TraceID() != root.SpanContext.TraceID() {
				t.Errorf("%s is in another trace", name)
			}
		}
	}

	page := decode[paginated[traceSummary]](t, get(t, f.url+"/traces?run_id="+runID, f.hdrs["alice"]))
	if len(page.Data) != 1 || page.Data[0].UserID == nil || *page.Data[0].UserID != "alice" || page.Data[0].Input == nil ||
		*page.Data[0].Input != "6*7 please" {
		t.Fatalf("alice's traces of the MCP run: %+v", page)
	}
	id := page.Data[0].TraceID
	detail := decode[traceDetail](t, get(t, f.url+"/traces/"+id, f.hdrs["alice"]))
	if detail.Input == nil || *detail.Input != "6*7 please" || detail.Output == nil || *detail.Output != "42" || detail.TotalSpans < 4 {
		t.Fatalf("trace detail: %+v", detail)
	}
	if res := get(t, f.url+"/traces/"+id, f.hdrs["bob"]); res.status != http.StatusNotFound {
		t.Errorf("bob reads alice's MCP trace: %d %s", res.status, res.body)
	}
	if res := get(t, f.url+"/traces?run_id="+runID, f.hdrs["bob"]); !strings.Contains(res.body, `"total_count":0`) {
		t.Errorf("bob lists alice's MCP trace: %s", res.body)
	}
}

// TestTraceContent_ThroughTheRoutes: the prompt and the answer show as the
// trace's input and output, tool arguments and results on the tool node;
// a long prompt is cut at the cap with the marker; with capture off no
// text reaches the stored spans or the exporter; another user's trace is
// 404 whatever its content.
func TestTraceContent_ThroughTheRoutes(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100) + "6*7?"
	for _, c := range []struct {
		name            string
		content         trace.Content
		message         string
		input, output   string // "" = absent
		toolIn, toolOut string
	}{
		{"captured", trace.Content{}, "6*7?", "6*7?", "42", `{"A":6,"B":7}`, "42"},
		{"truncated", trace.Content{MaxBytes: 20}, long, strings.Repeat("x", 20) + "…[truncated: 20 of 104 bytes]", "42",
			`{"A":6,"B":7}`, "42"},
		{"off", trace.Content{Omit: true}, "6*7?", "", "", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newTraceFixtureWith(t, c.content)
			res := postForm(t, f.url+"/agents/calc/runs", map[string]string{"message": c.message, "stream": "false"}, f.hdrs["alice"])
			if res.status != http.StatusOK {
				t.Fatalf("run: %d %s", res.status, res.body)
			}
			if err := f.tp.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			page := decode[paginated[traceSummary]](t, get(t, f.url+"/traces", f.hdrs["alice"]))
			if len(page.Data) != 1 {
				t.Fatalf("traces: %+v", page)
			}
			id := page.Data[0].TraceID
			res = get(t, f.url+"/traces/"+id, f.hdrs["alice"])
			d := decode[traceDetail](t, res)
			if str(d.Input) != c.input || str(d.Output) != c.output || str(page.Data[0].Input) != c.input {
				t.Errorf("input %q output %q (list input %q), want %q %q", str(d.Input), str(d.Output), str(page.Data[0].Input), c.input, c.output)
			}
			var tool *traceNode
			var walk func([]*traceNode)
			walk = func(ns []*traceNode) {
				for _, n := range ns {
					if n.Type == "TOOL" {
						tool = n
					}
					walk(n.Spans)
				}
			}
			walk(d.Tree)
			if tool == nil {
				t.Fatalf("no tool node in %s", res.body)
			}
			if str(tool.Input) != c.toolIn || str(tool.Output) != c.toolOut {
				t.Errorf("tool node input %q output %q, want %q %q", str(tool.Input), str(tool.Output), c.toolIn, c.toolOut)
			}
			if c.content.Omit {
				if strings.Contains(res.body, "6*7") || strings.Contains(res.body, `"input"`) || strings.Contains(res.body, `"output"`) {
					t.Errorf("content captured while off: %s", res.body)
				}
				for _, s := range f.exported.GetSpans() {
					for _, kv := range s.Attributes {
						if strings.HasPrefix(string(kv.Key), "input.") || strings.HasPrefix(string(kv.Key), "output.") {
							t.Errorf("exported span %s carries %s", s.Name, kv.Key)
						}
					}
				}
			}
			if res := get(t, f.url+"/traces/"+id, f.hdrs["bob"]); res.status != http.StatusNotFound {
				t.Errorf("bob reads alice's trace: %d %s", res.status, res.body)
			}
		})
	}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
