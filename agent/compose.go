package agent

import (
	"context"
	"sync"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// The seams a composing component (a team's delegation tools, a workflow
// step) uses to act on the run it executes in: forward another run's events
// onto this run's stream (Emit), run a child with its events delivered to a
// function (WithEventFunc), pause this run until a child's requirements are
// resolved (PauseToolCall), and iterate the model loop (Config.Iterate).

// emitter forwards events to the live consumer of one run. On the run's own
// goroutine (hooks, and a lone tool call executed inline) it sends directly;
// tool calls executing concurrently hand their events to the run's goroutine
// over ch, which it drains while it waits for their results.
type emitter struct {
	st   *state
	ch   chan run.Event // nil: send directly (the caller is the run's goroutine)
	done <-chan struct{}
}

type emitterKey struct{}

// Emit forwards e (an event of another run, such as a member's) to the live
// stream consumer of the run ctx belongs to: the run's own hooks and tool
// calls may call it. Forwarded events are not renamed; with StoreEvents they
// are stored with the run's events (content deltas excepted), in stream
// order, as Agno stores a team's member events. It reports false, doing
// nothing, when nobody reads the run's stream. Safe for concurrent use by
// the run's tool calls.
func Emit(ctx context.Context, e run.Event) bool {
	em, ok := ctx.Value(emitterKey{}).(*emitter)
	if !ok {
		return false
	}
	if em.ch == nil {
		if !em.st.sink.live() {
			return false
		}
		em.st.forward(e)
		return true
	}
	select {
	case em.ch <- e:
		return true
	case <-em.done:
		return false
	case <-ctx.Done():
		return false
	}
}

// StreamingEvents reports whether the run ctx belongs to has a live stream
// consumer, so that forwarding events to it (Emit) is worth building them.
func StreamingEvents(ctx context.Context) bool {
	em, ok := ctx.Value(emitterKey{}).(*emitter)
	return ok && (em.ch != nil || em.st.sink.live())
}

// WithEventFunc delivers the run's events (content deltas included) to fn
// while Run or ContinueRun executes it, as Stream would yield them (Stream
// and ContinueStream give fn each event before they yield it); fn runs on
// the run's goroutine and must not block for long. A team forwards a
// member's events this way and still gets the member's output.
func WithEventFunc(fn func(run.Event)) RunOption {
	return func(o *runOptions) { o.set().eventFunc = fn }
}

// PauseToolCall pauses the run that the tool call ctx belongs to once the
// call returns: the call gets no result (its returned content is dropped),
// the run is stored PAUSED with reqs among its requirements, and ContinueRun
// executes the call again, with the same arguments, after the requirements
// were resolved. A team's delegation tool pauses this way when the member it
// ran paused. It reports false when ctx is not the context of a tool call.
func PauseToolCall(ctx context.Context, reqs []run.Requirement) bool {
	n, ok := ctx.Value(nestedKey{}).(*nestedCalls)
	if !ok {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pause = append(n.pause, reqs...)
	n.paused = true
	return true
}

// Iteration makes a run iterate (Agno's tasks mode): when the model answers
// without calling tools, Completed decides whether the run goes on with
// another user message (next) or completes with the answer. Started is
// called when each iteration begins (from 1), before its first model
// request. Both run on the run's goroutine with the run's context; they may
// Emit events. Max bounds the iterations (default 10).
type Iteration struct {
	Max       int
	Started   func(ctx context.Context, n, max int)
	Completed func(ctx context.Context, n, max int, answer string) (next string, again bool)
}

// concurrentEmitter is the emitter of one batch of concurrent tool calls.
type concurrentEmitter struct {
	em   *emitter
	ch   chan run.Event
	done chan struct{}
	once sync.Once
}

func (st *state) newConcurrentEmitter() *concurrentEmitter {
	if !st.sink.live() {
		return nil
	}
	ch, done := make(chan run.Event), make(chan struct{})
	return &concurrentEmitter{em: &emitter{st: st, ch: ch, done: done}, ch: ch, done: done}
}

func (c *concurrentEmitter) context(ctx context.Context) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, emitterKey{}, c.em)
}

func (c *concurrentEmitter) events() <-chan run.Event {
	if c == nil {
		return nil
	}
	return c.ch
}

func (c *concurrentEmitter) close() {
	if c != nil {
		c.once.Do(func() { close(c.done) })
	}
}

func (pc *pendingCall) setExtras(x callExtras) {
	pc.nested, pc.paused, pc.pause = x.nested, x.paused, x.pause
}

// pauseForTools pauses the run when tool calls of the turn asked to
// (PauseToolCall): the other calls' results are in the run already
// (executeTools), the pausing calls are stored without a result and without a
// tool message, so ContinueRun executes them again. It reports whether the
// run paused.
func (st *state) pauseForTools(pcs []pendingCall) bool {
	var reqs []run.Requirement
	var waiting []run.ToolExecution
	for i := range pcs {
		if !pcs[i].paused {
			continue
		}
		ex := pcs[i].exec
		ex.Result, ex.ToolCallError, ex.Metrics = "", false, nil
		st.out.Tools = append(st.out.Tools, ex)
		waiting = append(waiting, ex)
		reqs = append(reqs, pcs[i].pause...)
	}
	if waiting == nil {
		return false
	}
	st.pause(waiting, reqs)
	return true
}

// iterationStarted begins the next iteration of an iterating run.
func (st *state) iterationStarted() {
	it := st.a.conf().Iterate
	if it == nil {
		return
	}
	x := st.extras()
	x.iteration++
	if it.Started != nil {
		it.Started(st.ctx, x.iteration, it.max())
	}
}

// iterateAgain asks Config.Iterate whether the run goes on after the model
// answered; if so the next user message is added and the next iteration
// begins.
func (st *state) iterateAgain(answer string) bool {
	it := st.a.conf().Iterate
	if it == nil || it.Completed == nil || st.ctx.Err() != nil {
		return false
	}
	n := st.extras().iteration // iterationStarted set it
	next, again := it.Completed(st.ctx, n, it.max(), answer)
	if !again || n >= it.max() || st.ctx.Err() != nil {
		return false
	}
	st.msgs = append(st.msgs, model.Message{Role: model.RoleUser, Content: next, CreatedAt: time.Now().Unix()})
	st.iterationStarted()
	return true
}

func (it *Iteration) max() int {
	if it.Max <= 0 {
		return 10
	}
	return it.Max
}

// useEventFunc makes WithEventFunc's function the run's live consumer.
func (st *state) useEventFunc() {
	if fn := st.opts.get().eventFunc; fn != nil {
		st.sink.yield = func(e run.Event, err error) bool {
			if err == nil {
				fn(e)
			}
			return true
		}
	}
}

// inline reports whether every call still to execute is to a tool that
// honours cancellation (tool.Definition.HonorsCancel).
func (st *state) inline(pcs []pendingCall) bool {
	for i := range pcs {
		if pcs[i].done {
			continue
		}
		j := st.tix.lookup(pcs[i].call.Name)
		if j < 0 || !st.tix.defs[j].HonorsCancel {
			return false
		}
	}
	return true
}
