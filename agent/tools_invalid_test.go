package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// badSchemaTool declares parameters that are not a valid JSON Schema.
type badSchemaTool struct{}

func (badSchemaTool) Definition() tool.Definition {
	return tool.Definition{Name: "broken", Description: "has a bad schema",
		Parameters: json.RawMessage(`{"type": 42}`)}
}

func (badSchemaTool) Call(context.Context, json.RawMessage) (string, error) { return "ok", nil }

func TestRun_InvalidToolSchemaFailsTheRun(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, Config{Model: scripted.Reply("hello"), Tools: []tool.Tool{badSchemaTool{}}})
	_, err := a.Run(context.Background(), run.TextInput("hi"))
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("err = %v; a tool whose schema does not compile must fail the run, not vanish", err)
	}
}
