package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

func pageTool(n int) tool.Tool {
	return funcTool("fetch_page", tool.FuncConfig{}, func(context.Context) (string, error) {
		var b strings.Builder
		for i := 1; b.Len() < n; i++ {
			fmt.Fprintf(&b, "row %05d secret-%d %s\n", i, i, strings.Repeat("z", 60))
		}
		return b.String(), nil
	})
}

func offloadAgent(t *testing.T, d *db.DB, m model.Model, cfg *offload.Config) *Agent {
	return mustAgent(t, Config{Name: "reader", Model: m, DB: d, Tools: []tool.Tool{pageTool(40_000)},
		AddHistoryToContext: true, OffloadToolResults: cfg})
}

func TestOffload_ModelSeesEnvelopeAndReadsTheRest(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	id := offload.ResultID("s1", "run-1", "call-fetch")
	rec := &recorder{Model: script(t,
		scripted.Turn{Match: "fetch", ToolCalls: []scripted.ToolCall{{ID: "call-fetch", Name: "fetch_page"}}},
		scripted.Turn{Match: "fetch", ToolCalls: []scripted.ToolCall{{ID: "call-read", Name: "read_result", Args: map[string]any{"result_id": id, "start_line": 300, "end_line": 301}}}},
		scripted.Turn{Match: "fetch", ToolCalls: []scripted.ToolCall{{ID: "call-search", Name: "search_result", Args: map[string]any{"result_id": id, "pattern": "secret-45[0-9]$|secret-450 "}}}},
		scripted.Turn{Match: "fetch", Content: "done"},
		scripted.Turn{Match: "again", Content: "ok"},
	)}
	a := offloadAgent(t, d, rec, &offload.Config{})
	out, err := a.Run(context.Background(), run.TextInput("fetch the page"), WithSessionID("s1"), WithRunID("run-1"), WithUserID("alice"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run: %v %v", err, out.Status)
	}
	reqs := rec.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if sys := reqs[0][0]; sys.Role != model.RoleSystem || !strings.Contains(sys.Content, "read_result(result_id") {
		t.Fatalf("system message lacks the envelope convention: %q", sys.Content)
	}
	if specs := a.Tools(); len(specs) != 3 || specs[1].Name != "read_result" || specs[2].Name != "search_result" {
		t.Fatalf("tools = %+v", specs)
	}
	toolMsg := reqs[1][len(reqs[1])-1]
	if !strings.HasPrefix(toolMsg.Content, `<result id="`+id+`" tool="fetch_page" lines="`) || len(toolMsg.Content) > 3000 || strings.Contains(toolMsg.Content, "row 00300") {
		t.Fatalf("model saw %d chars:\n%.300s", len(toolMsg.Content), toolMsg.Content)
	}
	read := reqs[2][len(reqs[2])-1].Content
	if !strings.Contains(read, "row 00300 secret-300") || !strings.Contains(read, "row 00301 secret-301") || strings.Contains(read, "row 00302") {
		t.Fatalf("read_result gave:\n%s", read)
	}
	search := reqs[3][len(reqs[3])-1].Content
	if !strings.Contains(search, "450: row 00450 secret-450") {
		t.Fatalf("search_result gave:\n%s", search)
	}
	// the stored run keeps the envelope, not the 40 KB result
	row, err := d.GetRun(context.Background(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(row.RunData), "row 00200") || !strings.Contains(string(row.RunData), `<result id=\"`+id+`\" tool=\"fetch_page\"`) {
		t.Fatalf("stored run_data (%d bytes) does not keep the envelope", len(row.RunData))
	}
	if len(row.RunData) > 20_000 {
		t.Fatalf("stored run_data is %d bytes", len(row.RunData))
	}
	// a later run's history carries the envelope, and the result stays readable
	if _, err := a.Run(context.Background(), run.TextInput("again"), WithSessionID("s1"), WithUserID("alice")); err != nil {
		t.Fatal(err)
	}
	last := rec.requests()[4]
	var sawEnvelope bool
	for _, m := range last {
		if strings.Contains(m.Content, "row 00200") {
			t.Fatal("history carries the full result")
		}
		sawEnvelope = sawEnvelope || strings.HasPrefix(m.Content, `<result id="`+id)
	}
	if !sawEnvelope {
		t.Fatal("history lacks the envelope")
	}
}

func TestOffload_AnotherUsersResultIsNotFoundThroughTheTool(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	id := offload.ResultID("s1", "run-2", "call-fetch")
	m := script(t,
		scripted.Turn{Match: "fetch", ToolCalls: []scripted.ToolCall{{ID: "call-fetch", Name: "fetch_page"}}},
		scripted.Turn{Match: "fetch", Content: "done"},
		scripted.Turn{Match: "steal", ToolCalls: []scripted.ToolCall{{ID: "x", Name: "read_result", Args: map[string]any{"result_id": id}}}},
		scripted.Turn{Match: "steal", Content: "nothing"},
	)
	a := offloadAgent(t, d, m, &offload.Config{})
	if _, err := a.Run(context.Background(), run.TextInput("fetch"), WithSessionID("s1"), WithRunID("run-2"), WithUserID("alice")); err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]RunOption{{WithSessionID("s2"), WithUserID("alice")}, {WithSessionID("s9"), WithUserID("bob")}} {
		out, err := a.Run(context.Background(), run.TextInput("steal"), opts...)
		if err != nil {
			t.Fatal(err)
		}
		ex := out.Tools[0]
		if !ex.ToolCallError || !strings.Contains(ex.Result, "result not found") {
			t.Fatalf("read of another scope: %+v", ex)
		}
	}
}

func TestOffload_SmallResultsAndOffByDefault(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	m := script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c", Name: "fetch_page"}}}, scripted.Turn{Content: "done"})
	a := mustAgent(t, Config{Model: m, DB: d, Tools: []tool.Tool{pageTool(40_000)}})
	out, err := a.Run(context.Background(), run.TextInput("x"))
	if err != nil || len(out.Tools[0].Result) < 40_000 {
		t.Fatalf("without offloading the result changed: %d %v", len(out.Tools[0].Result), err)
	}
	if len(a.Tools()) != 1 {
		t.Fatalf("offload tools given without offloading: %+v", a.Tools())
	}
	a = mustAgent(t, Config{Model: m, DB: d, Tools: []tool.Tool{pageTool(15_000)}, OffloadToolResults: &offload.Config{}})
	out, err = a.Run(context.Background(), run.TextInput("x"))
	if err != nil || strings.HasPrefix(out.Tools[0].Result, "<result") {
		t.Fatalf("a result under the threshold was offloaded: %v", err)
	}
}

func TestOffload_QuotaRefusalKeepsTheRunGoing(t *testing.T) {
	t.Parallel()
	m := script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c", Name: "fetch_page"}}}, scripted.Turn{Content: "done"})
	a := mustAgent(t, Config{Model: m, DB: testdbs.SQLite(t), Tools: []tool.Tool{pageTool(40_000)}, OffloadToolResults: &offload.Config{MaxFileBytes: 10_000}})
	out, err := a.Run(context.Background(), run.TextInput("x"), WithSessionID("s"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run: %v", err)
	}
	if r := out.Tools[0].Result; !strings.Contains(r, `stored="false"`) || out.Tools[0].ToolCallError {
		t.Fatalf("result: %.200s", r)
	}
}

func TestOffload_BinaryToolOutputBecomesAToolError(t *testing.T) {
	t.Parallel()
	bin := funcTool("dump", tool.FuncConfig{}, func(context.Context) (string, error) { return strings.Repeat("\xff\x00", 20_000), nil })
	m := script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c", Name: "dump"}}}, scripted.Turn{Content: "done"})
	a := mustAgent(t, Config{Model: m, DB: testdbs.SQLite(t), Tools: []tool.Tool{bin}, OffloadToolResults: &offload.Config{}})
	out, err := a.Run(context.Background(), run.TextInput("x"), WithSessionID("s"))
	if err != nil {
		t.Fatal(err)
	}
	if ex := out.Tools[0]; !ex.ToolCallError || !strings.Contains(ex.Result, "binary or not valid UTF-8") || len(ex.Result) > 500 {
		t.Fatalf("result: %.200q", ex.Result)
	}
}

func TestNew_OffloadNeedsADBAndFreeToolNames(t *testing.T) {
	t.Parallel()
	m := scripted.Reply("x")
	if _, err := New(Config{Model: m, OffloadToolResults: &offload.Config{}}); err == nil || !strings.Contains(err.Error(), "needs Config.DB") {
		t.Fatalf("no DB: %v", err)
	}
	clash := funcTool("read_result", tool.FuncConfig{}, func(context.Context) (string, error) { return "", nil })
	if _, err := New(Config{Model: m, DB: testdbs.SQLite(t), Tools: []tool.Tool{clash}, OffloadToolResults: &offload.Config{}}); err == nil {
		t.Fatal("a tool named read_result was accepted")
	}
	if _, err := New(Config{Model: m, DB: testdbs.SQLite(t), OffloadToolResults: &offload.Config{ThresholdChars: -1}}); err == nil {
		t.Fatal("a negative threshold was accepted")
	}
}
