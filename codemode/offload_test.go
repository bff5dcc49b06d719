package codemode_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/offload"
)

func TestOffloadResults_CodeReadsTheAgentsOffloadedResults(t *testing.T) {
	t.Parallel()
	o, err := offload.New(testdbs.SQLite(t), offload.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range 2000 {
		b.WriteString("row ")
		b.WriteString(strings.Repeat("x", i%7))
		if i == 1234 {
			b.WriteString(" NEEDLE")
		}
		b.WriteString("\n")
	}
	ctx := context.Background()
	out, err := o.Offload(ctx, offload.Call{Scope: offload.Scope{SessionID: "s", RunID: "r", UserID: "u"}, ToolCallID: "c", ToolName: "dump"}, b.String())
	if err != nil || !out.Stored {
		t.Fatalf("offload: %+v %v", out, err)
	}
	cm := newCM(t, codemode.Config{Results: codemode.OffloadResults(o)})
	c, err := cm.Run(ctx, "s", "u", `const m = await results.search("`+out.ResultID+`", "NEEDLE"); const p = await results.read("`+out.ResultID+`", {start_line: 1999}); const ids = await results.ids(); [m[0].line_number, p.text.length > 0, ids[0].tool_name, (await results.get("`+out.ResultID+`")).length]`)
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonText(resultOf(t, c)); got != `[1235,true,"dump",`+strconv.Itoa(len(b.String()))+`]` {
		t.Fatalf("got %s", got)
	}
	c, err = cm.Run(ctx, "s2", "u", `await results.get("`+out.ResultID+`")`)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, "not found") {
		t.Fatalf("another session's read: %s", c.JSON())
	}
}
