package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// A durable run (WithJournal) records each model call as step "model:N",
// N counting the run's own assistant turns (so a continued or replayed run
// numbers its calls the same way), and each tool call as "tool:CALL_ID".

func (st *state) attempt() int {
	if st.opts.more == nil || st.opts.more.attempt < 1 {
		return 1
	}
	return st.opts.more.attempt
}

// claim fences older attempts of a durable run off it before its first step
// (run.Fencer); a run that a newer attempt holds ends without being saved.
// It reports whether the run goes on.
func (st *state) claim() bool {
	f, ok := st.opts.journal().(run.Fencer)
	if !ok {
		return true
	}
	if err := f.Fence(st.ctx, st.out.RunID, st.attempt()); err != nil {
		st.finishErr(err)
		return false
	}
	return true
}

// modelStepKey names the next model call of the run.
func (st *state) modelStepKey() string {
	n := 1
	for i := range st.msgs {
		if st.msgs[i].Role == model.RoleAssistant && !st.msgs[i].FromHistory {
			n++
		}
	}
	return "model:" + strconv.Itoa(n)
}

// modelStep is a model call's recorded result: the assembled response
// (usage included) and the model that answered (a fallback, maybe).
type modelStep struct {
	Response *model.Response `json:"response"`
	Model    model.Info      `json:"model"`
}

// journaledModel is askModel through the run's journal: a recorded call is
// replayed (its content reaches a live consumer as one delta).
func (st *state) journaledModel(req *model.Request) (model.Response, model.Info, error) {
	j := st.opts.journal()
	if j == nil {
		return st.askModel(req)
	}
	if rec := st.unrecorded(); rec != nil {
		// The previous call is what this one goes on from.
		st.ext.unrecorded = nil
		if err := rec(context.WithoutCancel(st.ctx)); err != nil {
			return model.Response{}, model.Info{}, err
		}
	}
	called := false
	reqInfo, _ := json.Marshal(map[string]any{"model": st.p.info.ID, "messages": req.Len(), "tools": len(req.Tools)})
	step := run.JournalStep{RunID: st.out.RunID, Key: st.modelStepKey(), Kind: "model", Attempt: st.attempt(), Idempotent: true, Request: reqInfo}
	ask := func(context.Context) (json.RawMessage, error) {
		resp, info, err := st.askModel(req)
		if err != nil {
			return nil, err
		}
		called = true
		return json.Marshal(modelStep{Response: &resp, Model: info})
	}
	var raw json.RawMessage
	var err error
	if lj, ok := j.(run.LazyJournal); ok {
		// Recorded by recordModelStep unless it is the run's last step.
		raw, st.extras().unrecorded, err = lj.DoLazy(st.ctx, step, ask)
	} else {
		raw, err = j.Do(st.ctx, step, ask)
	}
	if err != nil {
		return model.Response{}, model.Info{}, err
	}
	var ms modelStep
	if err := json.Unmarshal(raw, &ms); err != nil || ms.Response == nil {
		return model.Response{}, model.Info{}, fmt.Errorf("agent: run %s: the journal's model step does not decode (%v): run it without the journal", st.out.RunID, err)
	}
	// A model step's message is the model's answer, the assistant's, whatever
	// a damaged row says: the next step's key counts assistant messages
	// (modelStepKey), and a replayed step that did not count would be
	// replayed again, with its tool calls, forever.
	ms.Response.Message.Role = model.RoleAssistant
	if !called {
		if ms.Model.ID != "" {
			st.out.Model, st.out.ModelProvider = ms.Model.ID, ms.Model.Provider
		}
		if c := ms.Response.Message.Content; c != "" && st.sink.live() {
			t := run.EventRunContent
			if st.intermediate {
				t = run.EventRunIntermediateContent
			}
			e := st.ev(t)
			e.Content, e.ContentType = c, "str"
			st.sendDelta(e)
		}
	}
	return *ms.Response, ms.Model, nil
}

// recordModelStep records the model call whose result the run goes on from
// (run.LazyJournal): before its tool calls run and before the next model
// call. A run that ends after the call records nothing: its final save is
// the record (and the durable queue clears the journal in that save's
// transaction). It reports whether the run may go on.
func (st *state) recordModelStep() bool {
	rec := st.unrecorded()
	if rec == nil {
		return true
	}
	st.ext.unrecorded = nil
	if err := rec(context.WithoutCancel(st.ctx)); err != nil {
		st.finishErr(err)
		return false
	}
	return true
}

// toolStep is a tool call's recorded result.
type toolStep struct {
	Content  string              `json:"content"`
	IsError  bool                `json:"is_error,omitempty"`
	Duration float64             `json:"duration"`
	Nested   []run.ToolExecution `json:"nested,omitempty"`
	Child    string              `json:"child_run_id,omitempty"`
}

// idempotent reports whether a call may simply run again after a crash: its
// tool says so, or a human confirmed it after the run paused.
func (st *state) idempotent(exec *run.ToolExecution) bool {
	if exec.Confirmed != nil && *exec.Confirmed {
		return true
	}
	if k := st.tix.lookup(exec.ToolName); k >= 0 {
		return !st.tix.defs[k].NonIdempotent
	}
	return true
}

// journaledTool runs one call through the journal; err is a journal error
// (run.ErrStepInterrupted, run.ErrFenced, storage), never the tool's own.
func (st *state) journaledTool(ctx context.Context, call *model.ToolCall, exec *run.ToolExecution, rec *nestedCalls) (callExtras, error) {
	raw, err := st.opts.journal().Do(ctx, run.JournalStep{RunID: st.out.RunID, Key: "tool:" + call.ID, Kind: "tool", Attempt: st.attempt(),
		Idempotent: st.idempotent(exec), Request: toolArgs(call.Arguments)}, func(ctx context.Context) (json.RawMessage, error) {
		r := st.exec(ctx, *call)
		if err := ctx.Err(); err != nil {
			return nil, err // cancelled with the run: not a result
		}
		x := rec.take()
		return json.Marshal(toolStep{Content: r.Content, IsError: r.IsError(), Duration: r.Duration.Seconds(), Nested: x.nested, Child: x.child})
	})
	if err != nil {
		return callExtras{}, err
	}
	var ts toolStep
	if err := json.Unmarshal(raw, &ts); err != nil {
		return callExtras{}, fmt.Errorf("agent: run %s: the journal's step for tool call %s does not decode: %w", st.out.RunID, call.ID, err)
	}
	exec.Result, exec.ToolCallError = ts.Content, ts.IsError
	exec.Metrics = &run.Metrics{Duration: ts.Duration}
	return callExtras{nested: ts.Nested, child: ts.Child}, nil
}

// idempotencyKey is the key a tool call gets: stable per run and call.
func idempotencyKey(runID, callID string) string { return runID + "/" + callID }

// pauseInterrupted pauses the run because calls of non-idempotent tools were
// interrupted by a crash: each becomes a confirmation requirement (confirm
// runs it again, reject answers it as rejected); the calls that finished
// keep their results.
func (st *state) pauseInterrupted(pcs []pendingCall, interrupted map[int]bool) {
	now := time.Now().Unix()
	var waiting []run.ToolExecution
	var reqs []run.Requirement
	for i := range pcs {
		ex := pcs[i].exec
		if !interrupted[i] {
			st.appendResult(&pcs[i])
			continue
		}
		ex.Result, ex.ToolCallError, ex.Metrics = "", false, nil
		ex.RequiresConfirmation = true
		if ex.CreatedAt == 0 {
			ex.CreatedAt = now
		}
		cp := ex
		reqs = append(reqs, run.Requirement{ID: ex.ToolCallID, ToolExecution: &cp, Kind: "confirmation"})
		waiting = append(waiting, ex)
		st.out.Tools = append(st.out.Tools, ex)
	}
	st.out.Status = run.StatusPaused
	st.finalize()
	st.out.Requirements = reqs
	if !st.sink.on() {
		st.persist()
		return
	}
	e := st.ev(run.EventRunPaused)
	e.Tools = waiting
	e.Requirements = reqs
	st.terminal(e)
}
