package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/run"
)

// callWith is a continue_run request with the raw arguments args.
func callWith(args string) *mcp.CallToolRequest {
	return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "continue_run", Arguments: json.RawMessage(args)}}
}

// continue_run's requirements reach the run as the client sent them: a
// number past float64's integers (a user-input value, an id in tool_args)
// keeps its digits, and members the server does not model pass through.
func TestRequirementsArg_KeepsTheClientsBytes(t *testing.T) {
	t.Parallel()
	reqs, err := requirementsArg(callWith(`{"run_id":"r1","requirements":[{"id":"q1","kind":"user_input",` +
		`"tool_execution":{"tool_name":"pay","tool_args":{"account":9007199254740993,"amount":0.1}},` +
		`"agno_future_member":{"n":12345678901234567890}}]}`))
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

// A requirement member the server models but whose value has the wrong
// type (a resolution the run would not see: "confirmed":"yes") is refused,
// naming the member, instead of being kept aside as an unknown member and
// the run answering that the requirement was not resolved. Members left
// empty or null, and members the server does not model, are accepted.
func TestRequirementsArg_RefusesMistypedMembers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args, refuse string // refuse: "" accepted, else the error names it
	}{
		{`{"requirements":[{"id":"c1","tool_execution":{"tool_call_id":"c1","confirmed":true}}]}`, ""},
		{`{"requirements":[{"id":"c1","kind":"","tool_execution":{"confirmed":null,"result":"","tool_args":{}}}]}`, ""},
		{`{"requirements":[{"id":"c1","agno_member":"x","tool_execution":{"approval_id":5}}]}`, ""},
		{`{"requirements":null}`, ""},
		{`{"run_id":"r"}`, ""},
		{`{"requirements":[{"id":"c1","tool_execution":{"confirmed":"yes"}}]}`, "requirements[0].tool_execution.confirmed"},
		{`{"requirements":[{"id":"c1"},{"id":5}]}`, "requirements[1].id"},
		{`{"requirements":[{"id":"c1","tool_execution":"confirmed"}]}`, "requirements[0].tool_execution"},
		{`{"requirements":[{"id":"c1","tool_execution":{"answered":1}}]}`, "requirements[0].tool_execution.answered"},
		{`{"requirements":[7]}`, "requirements[0]"},
		{`{"requirements":{"id":"c1"}}`, "requirements"},
	}
	for _, tc := range tests {
		_, err := requirementsArg(callWith(tc.args))
		switch {
		case tc.refuse == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.args, err)
		case tc.refuse != "" && (!errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tc.refuse+":")):
			t.Errorf("%s: err = %v, want invalid input naming %s", tc.args, err, tc.refuse)
		}
	}
}

// The typed input continue_run's handler gets does not hold the
// requirements a second time: they are decoded once, from the raw
// arguments (requirementsArg). Decoding the typed input costs the same
// however many requirements are sent.
func TestLifecycleIn_DoesNotDecodeTheRequirements(t *testing.T) {
	args := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{"run_id":"r1","agent_id":"a","requirements":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"c%d","tool_execution":{"tool_call_id":"c%d","tool_name":"t","tool_args":{"a":1},"confirmed":true}}`, i, i)
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	allocs := func(raw []byte) float64 {
		return testing.AllocsPerRun(20, func() {
			var in lifecycleIn
			if err := json.Unmarshal(raw, &in); err != nil {
				t.Fatal(err)
			}
		})
	}
	one, many := allocs(args(1)), allocs(args(50))
	if many != one {
		t.Fatalf("decoding the typed input allocates %v times with 1 requirement, %v with 50: it decodes them", one, many)
	}
}

// continue_run refuses a mistyped resolution before touching the run: the
// tool is not executed, and the run continues once answered properly.
func TestContinueRun_MistypedResolutionIsRefused(t *testing.T) {
	f := newHITL(t)
	cs := f.mustConnect(t, token(t, "alice", time.Now().Add(time.Hour)))
	runID, sessionID, reqs := confirmAll(t, callTool(t, cs, "run_agent", map[string]any{"agent_id": "hitl", "message": "clean up"}))
	reqs[0].(map[string]any)["tool_execution"].(map[string]any)["confirmed"] = "yes"
	args := map[string]any{"agent_id": "hitl", "run_id": runID, "session_id": sessionID, "requirements": reqs}
	r := callTool(t, cs, "continue_run", args)
	if !r.IsError || !strings.Contains(resultText(r), "requirements[0].tool_execution.confirmed") || f.executed.Load() != 0 {
		t.Fatalf("continue_run with confirmed \"yes\" = %q (error %v), tool executed %d times", resultText(r), r.IsError, f.executed.Load())
	}
	reqs[0].(map[string]any)["tool_execution"].(map[string]any)["confirmed"] = true
	if r := callTool(t, cs, "continue_run", args); r.IsError || f.executed.Load() != 1 {
		t.Fatalf("continue_run confirmed = %q (error %v), tool executed %d times", resultText(r), r.IsError, f.executed.Load())
	}
}

// FuzzRequirementsArg: any arguments decode without panicking into
// requirements that encode and decode again to themselves, or are refused
// as invalid input naming the requirements.
func FuzzRequirementsArg(f *testing.F) {
	for _, s := range []string{
		`{"requirements":[{"id":"c1","tool_execution":{"tool_call_id":"c1","confirmed":true,"tool_args":{"n":9007199254740993}}}]}`,
		`{"requirements":[{"id":5}]}`, `{"requirements":[{"tool_execution":{"confirmed":"yes"}}]}`, `{"requirements":null}`,
		`{"requirements":[{"x":{"y":[1,2]}}]}`, `{}`, `[]`, `nul`, `{"requirements":[{"id":"a","ID":"b"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		reqs, err := requirementsArg(callWith(string(raw)))
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "requirements") {
				t.Fatalf("%q: err = %v, want invalid input naming the requirements", raw, err)
			}
			return
		}
		b, err := json.Marshal(reqs)
		if err != nil {
			t.Fatalf("%q: encode %+v: %v", raw, reqs, err)
		}
		var again []run.Requirement
		if err := json.Unmarshal(b, &again); err != nil {
			t.Fatalf("%q: decode %s: %v", raw, b, err)
		}
		b2, err := json.Marshal(again)
		if err != nil || string(b2) != string(b) {
			t.Fatalf("%q: %s decodes to %s (%v)", raw, b, b2, err)
		}
	})
}

// continue_run's input schema still tells clients the requirements are an
// array of objects (the typed input's field decodes nothing).
func TestLifecycleSchema_RequirementsAreAnArrayOfObjects(t *testing.T) {
	t.Parallel()
	s, err := lifecycleSchema()
	if err != nil {
		t.Fatal(err)
	}
	r := s.Properties["requirements"]
	if r == nil || !slices.Contains(r.Types, "array") || r.Items == nil || r.Items.Type != "object" || slices.Contains(s.Required, "requirements") {
		b, _ := json.Marshal(s)
		t.Fatalf("continue_run's schema: %s", b)
	}
}
