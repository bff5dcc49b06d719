package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// ErrRequirementUnresolved is returned by ContinueRun when a paused tool call
// has not been confirmed, answered or given an external result.
var ErrRequirementUnresolved = errors.New("agent: requirement not resolved")

func (a *Agent) continueState(ctx context.Context, paused *run.Output, opts []RunOption) (*state, error) {
	if paused == nil {
		return nil, errors.New("agent: ContinueRun needs the paused run")
	}
	if paused.Status != run.StatusPaused {
		return nil, fmt.Errorf("agent: continue run %s (status %s): %w", paused.RunID, paused.Status, run.ErrNotContinuable)
	}
	if err := CheckContinuedIDs(a.Component(), ResolveOptions(opts...), paused); err != nil {
		return nil, err // before newState lists a ToolProvider's tools
	}
	st, err := a.newState(ctx, opts, true)
	if err != nil {
		return nil, err
	}
	if paused.AgentID != "" && paused.AgentID != st.p.id {
		return nil, fmt.Errorf("agent: run %s belongs to agent %q, not %q", paused.RunID, paused.AgentID, st.p.id)
	}
	// The run continues in its paused run's session, which exists when
	// there is a database (the paused run is stored in it): newState took
	// the session for a new one when the options named none.
	st.opts.newSession = false
	out := *paused
	out.Tools = slices.Clone(paused.Tools)
	out.Messages = slices.Clone(paused.Messages)
	out.Events = slices.Clone(paused.Events)
	// The paused run's metadata stays; the continue's adds to it, the
	// agent's still winning (Agno keeps a continued run's metadata).
	if md := st.out.Metadata; md != nil {
		out.Metadata = run.MergeMetadata(paused.Metadata, md)
	}
	st.out = &out
	// Requirements may have been resolved in place or through options.
	for _, r := range paused.Requirements {
		if r.ToolExecution != nil {
			applyResolution(out.Tools, r.ToolExecution)
		}
	}
	more := st.opts.get()
	for i := range more.tools {
		applyResolution(out.Tools, &more.tools[i])
	}
	for _, r := range more.requirements {
		if r.ToolExecution != nil {
			applyResolution(out.Tools, r.ToolExecution)
		}
	}
	// The session's metrics counted the paused run's share when it was
	// stored; this run adds what it adds over that.
	counted := run.RunShare(paused.Metrics, paused.MemberResponses)
	st.extras().counted = &counted
	if m := paused.Metrics; m != nil {
		st.usage, st.extras().prior, st.ttft = m.Usage, m.Duration, m.TimeToFirstToken
		for role, list := range m.Details {
			for _, mm := range list {
				st.account(role, model.Info{ID: mm.ID, Provider: mm.Provider}, mm.Usage)
			}
		}
	}
	st.msgs = out.Messages
	// The calls waiting are those of the last assistant turn without a tool answer.
	calls := unansweredCalls(out.Messages)
	if len(calls) == 0 {
		return nil, fmt.Errorf("agent: continue run %s: no tool call is waiting: %w", out.RunID, run.ErrNotContinuable)
	}
	pcs := make([]pendingCall, len(calls))
	waiting := make(map[string]bool, len(calls))
	for i, c := range calls {
		waiting[c.ID] = true
		pc := pendingCall{call: c, exec: run.ToolExecution{ToolCallID: c.ID, ToolName: c.Name, ToolArgs: toolArgs(c.Arguments)}}
		if j := slices.IndexFunc(out.Tools, func(t run.ToolExecution) bool { return t.ToolCallID == c.ID }); j >= 0 {
			pc.exec = out.Tools[j]
		}
		ex := &pc.exec
		switch {
		case ex.RequiresConfirmation && ex.Confirmed == nil:
			return nil, unresolved(&out, ex, "confirmed (true or false)")
		case ex.RequiresConfirmation && !*ex.Confirmed:
			msg := "the user rejected this tool call"
			if ex.ConfirmationNote != "" {
				msg += ": " + ex.ConfirmationNote
			}
			pc.exec.Result, pc.done = msg, true
		case ex.RequiresUserInput && (ex.Answered == nil || !*ex.Answered):
			return nil, unresolved(&out, ex, "tool_args with the user's input and answered=true")
		case ex.RequiresUserInput && len(ex.ToolArgs) > 0 && !json.Valid(ex.ToolArgs):
			// The run could not be stored with them.
			return nil, unresolved(&out, ex, "tool_args to the user's input as a JSON object (they are not valid JSON)")
		case ex.RequiresUserInput:
			pc.call.Arguments = string(ex.ToolArgs)
		case ex.ExternalExecutionRequired && !ex.ResultGiven():
			return nil, unresolved(&out, ex, "result (the output of executing it)")
		case ex.ExternalExecutionRequired:
			pc.done = true
		}
		pcs[i] = pc
	}
	out.Tools = slices.DeleteFunc(out.Tools, func(t run.ToolExecution) bool { return waiting[t.ToolCallID] })
	st.toolCalls = int32(modelCallsMade(&out))
	x := st.extras()
	x.resume = pcs
	x.pausedApproval = cmp.Or(PauseApprovalID(paused), paused.RunID)
	return st, nil
}

// modelCallsMade counts the successful tool calls of a run's earlier legs
// that the model made (ToolCallLimit's unit); calls a tool made on the
// model's behalf (RecordToolCall) are stored too but do not count.
func modelCallsMade(out *run.Output) int {
	asked := map[string]bool{}
	for _, m := range out.Messages {
		for _, c := range m.ToolCalls {
			asked[c.ID] = true
		}
	}
	n := 0
	for _, t := range out.Tools {
		if !t.ToolCallError && asked[t.ToolCallID] {
			n++
		}
	}
	return n
}

func unresolved(out *run.Output, ex *run.ToolExecution, what string) error {
	return fmt.Errorf("%w: run %s, tool %s (call %s): set %s", ErrRequirementUnresolved, out.RunID, ex.ToolName, ex.ToolCallID, what)
}

// applyResolution copies the caller's decisions onto the matching execution.
func applyResolution(tools []run.ToolExecution, r *run.ToolExecution) {
	for i := range tools {
		t := &tools[i]
		if t.ToolCallID != r.ToolCallID {
			continue
		}
		if r.Confirmed != nil {
			t.Confirmed = r.Confirmed
		}
		if r.ConfirmationNote != "" {
			t.ConfirmationNote = r.ConfirmationNote
		}
		if r.Answered != nil {
			t.Answered = r.Answered
		}
		if len(r.ToolArgs) > 0 && t.RequiresUserInput {
			t.ToolArgs = r.ToolArgs
		}
		if t.ExternalExecutionRequired && r.ResultGiven() {
			t.SetResult(r.Result)
		}
		return
	}
}

func unansweredCalls(msgs []model.Message) []model.ToolCall {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role != model.RoleAssistant {
			continue
		}
		answered := make(map[string]bool)
		for _, t := range msgs[i+1:] {
			if t.Role == model.RoleTool {
				answered[t.ToolCallID] = true
			}
		}
		var out []model.ToolCall
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				out = append(out, c)
			}
		}
		return out
	}
	return nil
}

// runContinued executes the resolved calls, then resumes the loop.
func (st *state) runContinued() {
	history, err := st.loadContext()
	if st.refuseStart(err) {
		return // the stored run stays PAUSED: continuing can be retried
	}
	st.out.Status = run.StatusRunning
	st.out.Requirements = nil
	if st.sink.on() {
		st.emit(st.ev(run.EventRunContinued))
	}
	if err != nil {
		st.finishCancelled()
		return
	}
	if history.n > 0 {
		at := 0
		if len(st.msgs) > 0 && st.msgs[0].Role == model.RoleSystem {
			at = 1
		}
		st.setHistory(history, at)
	}
	if !st.claim() {
		return
	}
	resume := st.extras().resume
	st.applyLimit(resume)
	stop, content := st.executeTools(resume)
	switch {
	case st.stopped:
	case st.ctx.Err() != nil:
		st.finishCancelled()
	case st.out.Status == run.StatusPaused:
	case stop:
		st.complete(content)
	default:
		st.loop()
	}
}
