package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/run"
)

// PreHook runs before the model sees a run's input (Agno's pre_hooks). It may
// change the input in place (redact it, say): the changed input is what the
// model sees and what the run stores. Returning an *InputCheckError (or an
// error wrapping one) rejects the run; any other error also ends the run in
// ERROR, unlike Agno, which logs it and goes on: a hook that guards something
// must not fail open. FromContext gives the run's ids.
type PreHook interface {
	Name() string
	PreRun(ctx context.Context, in *run.Input) error
}

// PostHook runs on a run's output once the model has answered, before the run
// completes (Agno's post_hooks). It may change the output's Content in place.
// Returning an *OutputCheckError rejects the output; other errors end the run
// in ERROR too. In a stream the answer's RunContent deltas were sent before
// post-hooks run (as in Agno): the RunCompleted content and the stored run
// are what the hooks left; a consumer that must never see rejected text
// reads RunCompleted, not the deltas.
type PostHook interface {
	Name() string
	PostRun(ctx context.Context, out *run.Output) error
}

// PreHookFunc makes a PreHook of a function; name is the event's pre_hook_name.
func PreHookFunc(name string, f func(ctx context.Context, in *run.Input) error) PreHook {
	return preFunc{name, f}
}

// PostHookFunc makes a PostHook of a function; name is the event's post_hook_name.
func PostHookFunc(name string, f func(ctx context.Context, out *run.Output) error) PostHook {
	return postFunc{name, f}
}

type preFunc struct {
	name string
	f    func(context.Context, *run.Input) error
}

func (h preFunc) Name() string                                    { return h.name }
func (h preFunc) PreRun(ctx context.Context, in *run.Input) error { return h.f(ctx, in) }

type postFunc struct {
	name string
	f    func(context.Context, *run.Output) error
}

func (h postFunc) Name() string                                       { return h.name }
func (h postFunc) PostRun(ctx context.Context, out *run.Output) error { return h.f(ctx, out) }

// errHookPanicked wraps a hook's panic.
var errHookPanicked = errors.New("agent: hook panicked")

// checkInput validates the input against InputSchema, then runs the
// pre-hooks in order, each between PreHookStarted and PreHookCompleted. It
// reports whether the run goes on; otherwise the run has ended (ERROR or
// CANCELLED).
func (st *state) checkInput(in *run.Input) bool {
	if st.p.inputSchema != nil {
		if err := st.p.inputSchema.validate(in); err != nil {
			st.finishErr(err)
			return false
		}
	}
	for _, h := range st.a.conf().PreHooks {
		name := h.Name()
		if st.sink.on() {
			e := st.ev(run.EventPreHookStarted)
			e.PreHookName, e.RunInput = name, copyInput(in)
			st.emit(e)
		}
		if err := callHook(name, func() error { return h.PreRun(st.ctx, in) }); err != nil {
			st.finishErr(hookErr("pre-hook", name, err))
			return false
		}
		if st.ctx.Err() != nil {
			st.finishCancelled()
			return false
		}
		if st.sink.on() {
			e := st.ev(run.EventPreHookCompleted)
			e.PreHookName, e.RunInput = name, copyInput(in)
			st.emit(e)
		}
	}
	return true
}

// checkOutput runs the post-hooks in order on the finished output. It reports
// whether the run goes on to complete; otherwise it has ended in ERROR.
func (st *state) checkOutput() bool {
	for _, h := range st.a.conf().PostHooks {
		name := h.Name()
		if st.sink.on() {
			e := st.ev(run.EventPostHookStarted)
			e.PostHookName = name
			st.emit(e)
		}
		if err := callHook(name, func() error { return h.PostRun(st.ctx, st.out) }); err != nil {
			st.finishErr(hookErr("post-hook", name, err))
			return false
		}
		if st.ctx.Err() != nil {
			st.finishCancelled()
			return false
		}
		if st.sink.on() {
			e := st.ev(run.EventPostHookCompleted)
			e.PostHookName = name
			st.emit(e)
		}
	}
	return true
}

// hookErr keeps a check error as it is (its message is the run's content, as
// in Agno) and names the hook in any other error.
func hookErr(kind, name string, err error) error {
	if _, _, _, ok := checkFields(err); ok {
		return err
	}
	return fmt.Errorf("agent: %s %q: %w", kind, name, err)
}

func callHook(name string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if IsConsumerPanic(r) {
				panic(r) // a stream consumer's, through the hook's Emit
			}
			err = fmt.Errorf("%w: %s: %v", errHookPanicked, name, r)
		}
	}()
	return f()
}

func copyInput(in *run.Input) *run.Input {
	cp := *in
	return &cp
}
