package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// pendingCall is one tool call of a model turn on its way to a tool message.
type pendingCall struct {
	call model.ToolCall
	exec run.ToolExecution
	// done means exec.Result is already decided (rejected, external result,
	// limit reached): nothing is executed.
	done bool
	// nested are the calls the tool made on the model's behalf (RecordToolCall).
	nested []run.ToolExecution
	// jerr is the journal's refusal of the call (a durable run only).
	jerr error
	// paused: the tool asked to pause the run (PauseToolCall) with pause.
	paused bool
	pause  []run.Requirement
}

func (pc *pendingCall) skip(result string) {
	pc.exec.Result, pc.exec.ToolCallError, pc.done = result, true, true
}

// toolArgs keeps arguments as JSON when they are JSON, else as a JSON string,
// so a stored run always marshals.
func toolArgs(args string) json.RawMessage {
	if args == "" {
		return nil
	}
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(args)
	return b
}

// pending turns a model turn's calls into executions, applying ToolCallLimit.
func (st *state) pending(calls []model.ToolCall) []pendingCall {
	now := time.Now().Unix()
	pcs := make([]pendingCall, len(calls))
	for i, c := range calls {
		pcs[i] = pendingCall{call: c, exec: run.ToolExecution{
			ToolCallID: c.ID, ToolName: c.Name, ToolArgs: toolArgs(c.Arguments), CreatedAt: now,
		}}
		if j := st.tix.lookup(c.Name); j >= 0 {
			pcs[i].exec.StopAfterToolCall = st.tix.defs[j].StopAfterCall
		}
	}
	st.applyLimit(pcs)
	return pcs
}

// applyLimit counts the calls about to execute against ToolCallLimit and
// answers those past it with the limit error.
func (st *state) applyLimit(pcs []pendingCall) {
	limit := st.a.conf().ToolCallLimit
	if limit <= 0 {
		return
	}
	for i := range pcs {
		if pcs[i].done {
			continue
		}
		if int(st.toolCalls) >= limit {
			pcs[i].skip(st.limitMessage())
			continue
		}
		st.toolCalls++
	}
	if int(st.toolCalls) >= limit {
		st.limitHit = true
	}
}

type toolResult struct {
	i     int
	exec  run.ToolExecution
	extra callExtras
	jerr  error
}

// executeTools runs the calls that are not done, concurrently when there are
// several, emits tool events, and appends the executions and tool messages in
// call order. It reports whether a StopAfterCall tool ended the run, with the
// content to end it with.
func (st *state) executeTools(pcs []pendingCall) (stop bool, content string) {
	todo := 0
	for i := range pcs {
		if !pcs[i].done {
			todo++
			if st.sink.on() {
				e := st.ev(run.EventToolCallStarted)
				ex := pcs[i].exec
				e.Tool = &ex
				st.emit(e)
			}
		}
	}
	switch {
	case todo == 1 && (st.inline(pcs) || !st.sink.live()):
		// One call on the run's goroutine: a tool that Emits sends directly.
		// A tool that may outlive a cancellation runs on its own goroutine
		// when events are streamed (below), so it never sends concurrently
		// with the run.
		for i := range pcs {
			if !pcs[i].done {
				x, jerr := st.callTool(st.ctx, &pcs[i].call, &pcs[i].exec)
				pcs[i].setExtras(x)
				pcs[i].jerr = jerr
				pcs[i].done = true
				if pcs[i].jerr == nil {
					st.toolEvents(&pcs[i])
				}
			}
		}
	case todo >= 1:
		// The calls' goroutines read the run's extras (its offloader) and
		// may outlive the run (below): the pointer is set before they start
		// and never changes after.
		st.extras()
		results := make(chan toolResult, todo)
		// Calls to tools that honour cancellation are waited for after a
		// cancel too (what they started is stored before this run is).
		waitAll := st.inline(pcs)
		cancelled := st.ctx.Done()
		fwd := st.newConcurrentEmitter()
		defer fwd.close()
		callCtx := fwd.context(st.ctx)
		for i := range pcs {
			if pcs[i].done {
				continue
			}
			go func(i int, call model.ToolCall, exec run.ToolExecution) {
				extra, jerr := st.callTool(callCtx, &call, &exec)
				results <- toolResult{i, exec, extra, jerr}
			}(i, pcs[i].call, pcs[i].exec)
		}
		events := fwd.events()
	wait:
		for n := 0; n < todo; {
			select {
			case e := <-events:
				st.forward(e)
			case r := <-results:
				n++
				pcs[r.i].exec, pcs[r.i].jerr, pcs[r.i].done = r.exec, r.jerr, true
				pcs[r.i].setExtras(r.extra)
				if r.jerr == nil {
					st.toolEvents(&pcs[r.i])
				}
			case <-cancelled:
				if waitAll {
					cancelled = nil
					continue
				}
				// Tools that ignore cancellation finish in the background; their
				// results land in the buffered channel and are dropped.
				break wait
			}
		}
	}
	if st.ctx.Err() != nil {
		return false, ""
	}
	if st.stepStop(pcs) {
		return false, ""
	}
	var stops []string
	for i := range pcs {
		ex := &pcs[i].exec
		if pcs[i].paused {
			continue // see pauseForTools
		}
		st.appendResult(&pcs[i])
		if ex.StopAfterToolCall && !ex.ToolCallError {
			stops = append(stops, ex.Result)
		}
	}
	if st.pauseForTools(pcs) {
		return true, ""
	}
	if len(stops) > 0 {
		return true, strings.Join(stops, "\n")
	}
	return false, ""
}

// appendResult adds a finished call's executions and tool message to the run.
func (st *state) appendResult(pc *pendingCall) {
	ex := &pc.exec
	st.out.Tools = append(st.out.Tools, pc.nested...)
	st.out.Tools = append(st.out.Tools, *ex)
	st.msgs = append(st.msgs, model.Message{
		Role: model.RoleTool, Content: ex.Result, ToolCallID: ex.ToolCallID, ToolName: ex.ToolName,
		ToolArgs: ex.ToolArgs, ToolCallError: ex.ToolCallError, CreatedAt: ex.CreatedAt,
	})
}

// stepStop ends or pauses the run when the journal refused a call of the
// turn: a superseded attempt or a storage failure ends it in ERROR (a
// fenced run then saves nothing), interrupted non-idempotent calls pause
// it. It reports whether the run stopped.
func (st *state) stepStop(pcs []pendingCall) bool {
	interrupted := map[int]bool{}
	var fail error
	for i := range pcs {
		switch err := pcs[i].jerr; {
		case err == nil:
		case errors.Is(err, run.ErrStepInterrupted):
			interrupted[i] = true
		case fail == nil || errors.Is(err, run.ErrFenced):
			fail = err
		}
	}
	switch {
	case fail != nil:
		st.finishErr(fail)
	case len(interrupted) > 0:
		st.pauseInterrupted(pcs, interrupted)
	default:
		return false
	}
	st.stopped = true
	return true
}

// toolEvents emits the events of a finished call: those of the calls it made
// (started, then completed or error), then its own completion.
func (st *state) toolEvents(pc *pendingCall) {
	if !st.sink.on() || pc.paused {
		return
	}
	for i := range pc.nested {
		e := st.ev(run.EventToolCallStarted)
		started := pc.nested[i]
		started.Result, started.ToolCallError, started.Metrics = "", false, nil
		e.Tool = &started
		st.emit(e)
		st.toolEvent(&pc.nested[i])
	}
	st.toolEvent(&pc.exec)
}

func (st *state) toolEvent(ex *run.ToolExecution) {
	if !st.sink.on() {
		return
	}
	t := run.EventToolCallCompleted
	if ex.ToolCallError {
		t = run.EventToolCallError
	}
	e := st.ev(t)
	cp := *ex
	e.Tool = &cp
	st.emit(e)
}

// callTool executes one call through the tool set (lookup, argument
// validation, per-tool timeout, panic recovery) and records its result in
// exec. Every failure becomes a tool_call_error result the model can read;
// none ends the run. It returns the calls the tool made on the model's
// behalf (RecordToolCall) and whether it asked to pause the run
// (PauseToolCall). In a durable run the call is a journal step; jerr is the
// journal's refusal (the call then has no result).
func (st *state) callTool(ctx context.Context, call *model.ToolCall, exec *run.ToolExecution) (x callExtras, jerr error) {
	cc := &toolCallContext{Context: ctx, runID: st.out.RunID, callID: call.ID}
	ctx, rec := cc, &cc.rec
	if st.opts.journal() != nil {
		j, jerr := st.journaledTool(ctx, call, exec, rec)
		if jerr != nil {
			return callExtras{}, jerr
		}
		x = rec.take() // the pause a call asked for (a replayed call asks none)
		x.nested, x.child = j.nested, j.child
	} else {
		r := st.exec(ctx, *call)
		exec.Result, exec.ToolCallError = r.Content, r.IsError()
		exec.Metrics = &run.Metrics{Duration: r.Duration.Seconds()}
		x = rec.take()
	}
	if x.child != "" {
		exec.ChildRunID = x.child
	}
	st.offloadResult(call, exec)
	return x, nil
}

// toolCallContext is the context one tool call runs in: the run's, with the
// call's recorder of nested calls (RecordToolCall) and its idempotency key
// (run.IdempotencyKey, derived only when a tool asks), in one allocation.
type toolCallContext struct {
	context.Context
	rec           nestedCalls
	runID, callID string
}

func (c *toolCallContext) Value(key any) any {
	switch key {
	case nestedKey{}:
		return &c.rec
	case run.IdempotencyKeyContextKey:
		return c
	}
	return c.Context.Value(key)
}

// IdempotencyKey is the call's key: stable per run and call.
func (c *toolCallContext) IdempotencyKey() string { return idempotencyKey(c.runID, c.callID) }

// pauseIfNeeded pauses the run when the turn calls a human-in-the-loop tool:
// nothing of the turn executes; the run is stored PAUSED with its requirements.
func (st *state) pauseIfNeeded(calls []model.ToolCall) bool {
	need := false
	for _, c := range calls {
		if j := st.tix.lookup(c.Name); j >= 0 && hitl(&st.tix.defs[j]) {
			need = true
			break
		}
	}
	if !need {
		return false
	}
	now := time.Now().Unix()
	var waiting []run.ToolExecution
	var reqs []run.Requirement
	for _, c := range calls {
		ex := run.ToolExecution{ToolCallID: c.ID, ToolName: c.Name, ToolArgs: toolArgs(c.Arguments), CreatedAt: now}
		if j := st.tix.lookup(c.Name); j >= 0 {
			d := &st.tix.defs[j]
			ex.RequiresConfirmation = d.RequiresConfirmation
			ex.RequiresUserInput = d.RequiresUserInput
			ex.ExternalExecutionRequired = d.ExternalExecution
			ex.StopAfterToolCall = d.StopAfterCall
			if d.RequiresUserInput {
				ex.UserInputSchema = d.Parameters
			}
			if hitl(d) {
				cp := ex
				reqs = append(reqs, run.Requirement{ID: c.ID, ToolExecution: &cp, Kind: kindOf(d)})
				waiting = append(waiting, ex)
			}
		}
		st.out.Tools = append(st.out.Tools, ex)
	}
	st.pause(waiting, reqs)
	return true
}

// pause ends the run PAUSED on reqs, the requirements of the waiting tool
// executions: stored, or reported by a RunPaused event to a live consumer.
func (st *state) pause(waiting []run.ToolExecution, reqs []run.Requirement) {
	st.out.Requirements = reqs
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

func hitl(d *tool.Definition) bool {
	return d.RequiresConfirmation || d.RequiresUserInput || d.ExternalExecution
}

func kindOf(d *tool.Definition) string {
	switch {
	case d.RequiresConfirmation:
		return "confirmation"
	case d.RequiresUserInput:
		return "user_input"
	default:
		return "external_execution"
	}
}
