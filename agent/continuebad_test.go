package agent

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// A user-input answer whose tool_args is not JSON (a Go caller's
// json.RawMessage built by hand) is refused before the run continues: it
// was executed (a tool error the model read, the model called again) and
// then the run could not be stored (its tool_args do not encode), the row
// staying PAUSED for a second continue to execute again.
func TestContinueRefusesToolArgsThatAreNotJSON(t *testing.T) {
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "a.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ask := tool.MustFunc(tool.FuncConfig{Name: "book", Description: "Books a table.", RequiresUserInput: true},
		func(_ context.Context, in addArgs) (int, error) { return in.A * in.B, nil })
	m := script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "book", Args: map[string]any{"a": 0, "b": 0}}}},
		scripted.Turn{Content: "booked"})
	a := mustAgent(t, Config{DB: d, Model: m, Tools: []tool.Tool{ask}})
	out, err := a.Run(context.Background(), run.TextInput("book"))
	if err != nil || out.Status != run.StatusPaused {
		t.Fatalf("%v %v", err, out)
	}
	id := out.Requirements[0].ID
	_, err = a.ContinueRun(context.Background(), out, WithTools([]run.ToolExecution{{ToolCallID: id, ToolArgs: json.RawMessage(`{"a":6,`), Answered: boolp(true)}}))
	if !errors.Is(err, ErrRequirementUnresolved) {
		t.Fatalf("continue with tool_args that are not JSON: %v, want ErrRequirementUnresolved", err)
	}
	row, err := d.GetRun(context.Background(), out.RunID)
	if err != nil || row.Status != run.StatusPaused {
		t.Fatalf("stored %v %v, want PAUSED", row, err)
	}
	final, err := a.ContinueRun(context.Background(), out, WithTools([]run.ToolExecution{{ToolCallID: id, ToolArgs: json.RawMessage(`{"a":6,"b":7}`), Answered: boolp(true)}}))
	if err != nil || final.Status != run.StatusCompleted || final.Tools[0].Result != "42" {
		t.Fatalf("%v %+v", err, final)
	}
}
