package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// continue_run's requirements reach the run as the client sent them: a
// number past float64's integers (a user-input value, an id in tool_args)
// keeps its digits, and members the server does not model pass through.
func TestRequirementsArg_KeepsTheClientsBytes(t *testing.T) {
	t.Parallel()
	args := json.RawMessage(`{"run_id":"r1","requirements":[{"id":"q1","kind":"user_input",` +
		`"tool_execution":{"tool_name":"pay","tool_args":{"account":9007199254740993,"amount":0.1}},` +
		`"agno_future_member":{"n":12345678901234567890}}]}`)
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "continue_run", Arguments: args}}
	reqs, err := requirementsArg(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 || reqs[0].ToolExecution == nil {
		t.Fatalf("requirements = %+v", reqs)
	}
	if got, want := string(reqs[0].ToolExecution.ToolArgs), `{"account":9007199254740993,"amount":0.1}`; got != want {
		t.Errorf("tool_args = %s, want %s", got, want)
	}
	if got, want := string(reqs[0].Extra["agno_future_member"]), `{"n":12345678901234567890}`; got != want {
		t.Errorf("unmodelled member = %s, want %s", got, want)
	}
}
