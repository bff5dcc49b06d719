package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// Reliability checks the tool calls of a run: Output when given, else
// Target's answer to Input. A team run's calls include its members' (at
// every depth, as Agno's evidence does): a tool a member ran was run for
// the team. Every expected tool must have run cleanly (no
// error, not paused, not rejected at its confirmation); a call outside
// ExpectedToolCalls fails the eval unless AllowAdditionalToolCalls; a call
// in ForbiddenToolCalls always fails it.
// A tool the run's messages asked for that has no execution (a run Agno
// stored records none for a call its tool_call_limit refused) is an
// attempt, as in Agno: unexpected or forbidden, it fails the eval; expected,
// it is missing as refused. Requests in history messages do not count.
// A workflow target is refused (ErrInvalid): its run records no tool calls.
// ExpectedToolCallArguments maps a tool to argument values its clean calls
// must have had: each spec (Agno's object, or each of Agno's list of
// objects) by at least one call.
type Reliability struct {
	Record
	Target                    agent.Runner
	Input                     string
	Output                    *run.Output
	ExpectedToolCalls         []string
	ForbiddenToolCalls        []string
	AllowAdditionalToolCalls  bool
	ExpectedToolCallArguments map[string]ArgumentSpecs
}

// ArgumentSpecs are the argument values expected of one tool's calls, as
// Agno takes them: one object (at least one clean call has every value of
// it) or a list of objects (each matched so by at least one call). JSON
// and YAML take either form; one spec is written as an object.
type ArgumentSpecs []map[string]any

// UnmarshalJSON implements json.Unmarshaler.
func (a *ArgumentSpecs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var list []map[string]any
		if err := json.Unmarshal(b, &list); err != nil {
			return err
		}
		*a = list
		return a.check()
	}
	var one map[string]any
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	*a = ArgumentSpecs{one}
	return a.check()
}

// errNullSpec refuses a null where argument values are expected: it would
// match every call.
var errNullSpec = errors.New("expected tool call arguments: null is not an object of argument values")

func (a ArgumentSpecs) check() error {
	if slices.ContainsFunc(a, func(m map[string]any) bool { return m == nil }) {
		return errNullSpec
	}
	return nil
}

// MarshalJSON implements json.Marshaler.
func (a ArgumentSpecs) MarshalJSON() ([]byte, error) {
	if len(a) == 1 {
		return json.Marshal(a[0])
	}
	return json.Marshal([]map[string]any(a))
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (a *ArgumentSpecs) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		var list []map[string]any
		if err := n.Decode(&list); err != nil {
			return err
		}
		*a = list
		return a.check()
	}
	var one map[string]any
	if err := n.Decode(&one); err != nil {
		return err
	}
	*a = ArgumentSpecs{one}
	return a.check()
}

// ReliabilityResult is eval_data of a reliability eval (Agno's field names;
// eval_status is PASSED or FAILED).
type ReliabilityResult struct {
	EvalStatus           string   `json:"eval_status"`
	FailedToolCalls      []string `json:"failed_tool_calls"`
	PassedToolCalls      []string `json:"passed_tool_calls"`
	AdditionalToolCalls  []string `json:"additional_tool_calls"`
	MissingToolCalls     []string `json:"missing_tool_calls"`
	FailedArgumentChecks []string `json:"failed_argument_checks"`
	PassedArgumentChecks []string `json:"passed_argument_checks"`
	Outcome              `json:"-"`
}

// Run runs the eval and stores its row when DB is set.
func (r *Reliability) Run(ctx context.Context) (*ReliabilityResult, error) {
	if err := storableArguments(r.ExpectedToolCallArguments); err != nil {
		return nil, err
	}
	out := r.Output
	switch {
	case out == nil && (r.Target == nil || r.Input == ""):
		return nil, fmt.Errorf("%w: reliability eval needs a run output, or a target and an input", ErrInvalid)
	case out == nil && r.Target.Component().Type == run.TypeWorkflow:
		return nil, errWorkflowReliability
	}
	id := r.ensureID()
	if out == nil {
		var err error
		if out, err = runTarget(ctx, r.Target, r.Input, "eval_"+id+"_1", r.UserID); err != nil {
			return nil, err
		}
	}
	res := Check(out, r.ExpectedToolCalls, r.ForbiddenToolCalls, r.AllowAdditionalToolCalls, r.ExpectedToolCallArguments)
	input := map[string]any{"expected_tool_calls": r.ExpectedToolCalls, "allow_additional_tool_calls": r.AllowAdditionalToolCalls,
		"expected_tool_call_arguments": r.ExpectedToolCallArguments, "forbidden_tool_calls": r.ForbiddenToolCalls}
	c := describe(r.Target, out)
	if r.Target == nil {
		c.agentID, c.teamID, c.workflowID = out.AgentID, out.TeamID, out.WorkflowID
	}
	row, err := store(ctx, r.Record, TypeReliability, c, res, input)
	res.Row = row
	return res, err
}

// errWorkflowReliability refuses a reliability eval of a workflow: its run
// records no tool calls (its steps' runs do), so every expected tool would
// be missing and a forbidden one never seen.
var errWorkflowReliability = fmt.Errorf("%w: a reliability eval checks an agent's or a team's tool calls; a workflow's run records none (its steps' runs do), so evaluate the step's agent or team", ErrInvalid)

// storableArguments refuses expected arguments that cannot be stored in
// eval_input (JSON has no NaN or infinity, and no map with non-string
// keys), before the target runs.
func storableArguments(args map[string]ArgumentSpecs) error {
	for name, specs := range args {
		// YAML's null reaches no decoder: the tool's specs are nil.
		if specs == nil || specs.check() != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalid, name, errNullSpec)
		}
	}
	if _, err := json.Marshal(args); err != nil {
		return fmt.Errorf("%w: expected tool call arguments are not JSON: %v", ErrInvalid, err)
	}
	return nil
}

// Check classifies a run's tool calls (see Reliability).
func Check(out *run.Output, expected, forbidden []string, allowAdditional bool, args map[string]ArgumentSpecs) *ReliabilityResult {
	res := &ReliabilityResult{FailedToolCalls: []string{}, PassedToolCalls: []string{}, AdditionalToolCalls: []string{},
		MissingToolCalls: []string{}, FailedArgumentChecks: []string{}, PassedArgumentChecks: []string{}}
	clean := map[string][]map[string]any{}
	attempted := map[string]bool{}
	// classify files an attempted call: forbidden fails; one not expected
	// is additional or fails; an expected (or any, expecting nothing) one
	// passes when it ran cleanly.
	classify := func(name string, ok bool) {
		switch {
		case slices.Contains(forbidden, name):
			res.FailedToolCalls = append(res.FailedToolCalls, name)
		case expected != nil && !slices.Contains(expected, name):
			if allowAdditional {
				res.AdditionalToolCalls = append(res.AdditionalToolCalls, name)
			} else {
				res.FailedToolCalls = append(res.FailedToolCalls, name)
			}
		case ok:
			res.PassedToolCalls = append(res.PassedToolCalls, name)
		}
	}
	execs, requested := evidence(out)
	for _, t := range execs {
		if t.ToolName == "" {
			continue
		}
		attempted[t.ToolName] = true
		ok := !t.ToolCallError && !notRun(t)
		classify(t.ToolName, ok)
		if ok {
			var a map[string]any
			_ = json.Unmarshal(t.ToolArgs, &a)
			clean[t.ToolName] = append(clean[t.ToolName], a)
		}
	}
	// A call refused before it ran (Agno's tool_call_limit) leaves no
	// execution in a run Agno stored, only the model's request: as Agno,
	// the attempt counts. (Agentry records an execution for every call.)
	var unexecuted []string
	for _, name := range requested {
		if !attempted[name] && !slices.Contains(unexecuted, name) {
			unexecuted = append(unexecuted, name)
		}
	}
	slices.Sort(unexecuted)
	for _, name := range unexecuted {
		attempted[name] = true
		// Never ran: an expected one is reported missing below, as refused.
		classify(name, false)
	}
	missing := map[string]bool{}
	for _, name := range expected {
		if _, ok := clean[name]; ok {
			continue
		}
		missing[name] = true
		if attempted[name] {
			res.MissingToolCalls = append(res.MissingToolCalls, name+" (requested but refused/errored)")
		} else {
			res.MissingToolCalls = append(res.MissingToolCalls, name)
		}
	}
	names := make([]string, 0, len(args))
	for name := range args {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if missing[name] {
			continue
		}
		each := func(want map[string]any) bool {
			return slices.ContainsFunc(clean[name], func(actual map[string]any) bool { return argsMatch(want, actual) })
		}
		if len(clean[name]) > 0 && !slices.ContainsFunc(args[name], func(want map[string]any) bool { return !each(want) }) {
			res.PassedArgumentChecks = append(res.PassedArgumentChecks, name)
		} else {
			res.FailedArgumentChecks = append(res.FailedArgumentChecks, name)
		}
	}
	res.Passed = len(res.FailedToolCalls) == 0 && len(res.MissingToolCalls) == 0 && len(res.FailedArgumentChecks) == 0
	res.EvalStatus = "FAILED"
	if res.Passed {
		res.EvalStatus = "PASSED"
	}
	return res
}

// maxMemberDepth bounds how deep evidence follows member runs (a team
// nests at most team.MaxNestingDepth levels; stored run_data may claim
// more).
const maxMemberDepth = 32

// evidence is what a run shows of its tool calls, with its member runs'
// at every depth, in order: the executions, and the names of the tools
// its messages asked for (history messages, an earlier run's, left out).
// A member run that is not a run_data object adds nothing.
func evidence(out *run.Output) (execs []run.ToolExecution, requested []string) {
	request := func(msgs []model.Message) {
		for _, m := range msgs {
			if m.FromHistory {
				continue
			}
			for _, c := range m.ToolCalls {
				if c.Name != "" {
					requested = append(requested, c.Name)
				}
			}
		}
	}
	execs = slices.Clone(out.Tools)
	request(out.Messages)
	var members func(raws []json.RawMessage, depth int)
	members = func(raws []json.RawMessage, depth int) {
		if depth >= maxMemberDepth {
			return
		}
		for _, raw := range raws {
			var m struct {
				Tools   []run.ToolExecution `json:"tools"`
				Members []json.RawMessage   `json:"member_responses"`
			}
			if json.Unmarshal(raw, &m) != nil {
				continue
			}
			execs = append(execs, m.Tools...)
			// Apart: messages that do not decode cost their requests only.
			var msgs struct {
				Messages []model.Message `json:"messages"`
			}
			if json.Unmarshal(raw, &msgs) == nil {
				request(msgs.Messages)
			}
			members(m.Members, depth+1)
		}
	}
	members(out.MemberResponses, 0)
	return execs, requested
}

// notRun reports a call that did not run: still paused for the user, or
// rejected at its confirmation (the agent answers the model "the user
// rejected this tool call" instead of calling the tool).
func notRun(t run.ToolExecution) bool {
	return (t.RequiresConfirmation && (t.Confirmed == nil || !*t.Confirmed)) || (t.RequiresUserInput && t.Answered == nil) ||
		(t.ExternalExecutionRequired && !t.ResultGiven())
}

// argsMatch reports whether actual holds every key of want with an equal
// value (numbers compare as JSON numbers).
func argsMatch(want, actual map[string]any) bool {
	for k, v := range want {
		got, ok := actual[k]
		if !ok || !jsonEqual(v, got) {
			return false
		}
	}
	return true
}

func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var va, vb any
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	return reflect.DeepEqual(va, vb)
}
