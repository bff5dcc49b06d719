package agent

import (
	"fmt"
	"time"

	"github.com/agentryhq/agentry/run"
)

// sink delivers events to whoever listens. Run has no listener, so the loop
// builds no events at all unless StoreEvents is set; content deltas are built
// only for a live stream consumer.
type sink struct {
	yield   func(run.Event, error) bool
	stopped bool
	store   bool
	debug   *debugTrace // Config.DebugMode
}

// on reports whether anyone wants non-delta events.
func (s *sink) on() bool { return s.store || s.debug != nil || s.live() }

// live reports whether a stream consumer is reading (deltas are worth building).
func (s *sink) live() bool { return s.yield != nil && !s.stopped }

// ev returns an event named t in the vocabulary of the run's component
// (TeamRunStarted for a team, …), carrying its ids.
func (st *state) ev(t run.EventType) run.Event {
	e := st.p.comp.Event(t)
	e.CreatedAt, e.RunID, e.SessionID = time.Now().Unix(), st.out.RunID, st.out.SessionID
	e.ParentRunID = st.out.ParentRunID
	return e
}

func (st *state) emit(e run.Event) {
	st.record(e)
	st.send(e)
}

// record keeps e in the run's stored events when StoreEvents is set. Content
// deltas are never stored: they go to sendDelta only.
func (st *state) record(e run.Event) {
	if st.sink.store {
		st.out.Events = append(st.out.Events, e)
	}
}

// forward delivers an event of another run (a member's, Emit) on the run's
// stream and, with StoreEvents, keeps it in the run's stored events as
// Agno's team does (handle_event with its default events_to_skip): content
// deltas are not stored. Runs on the run's goroutine.
func (st *state) forward(e run.Event) {
	switch e.Event {
	case run.EventRunContent, run.TeamEvent(run.EventRunContent), run.TeamEvent(run.EventRunIntermediateContent):
	default:
		st.record(e)
	}
	st.send(e)
}

// send delivers e to a live stream consumer and the debug trace.
func (st *state) send(e run.Event) {
	if st.sink.debug != nil {
		st.sink.debug.trace(st, &e)
	}
	st.sendDelta(e)
}

// sendDelta delivers a content delta (RunContent, RunIntermediateContent,
// ReasoningContentDelta, as the component names them) to a live stream
// consumer only: deltas are neither stored nor traced.
func (st *state) sendDelta(e run.Event) {
	s := &st.sink
	if s.live() && !st.deliver(e) {
		s.stopped = true
		st.cancel(errStreamStopped)
	}
}

// deliver hands e to the consumer. A panic of the consumer (a Stream loop
// body, WithEventFunc's function) may unwind through code that recovers
// panics (a tool's, a hook's, a team member's) when the event was forwarded
// from there (Emit): it stops the stream and cancels the run, and goes on as
// a *streamPanic, which those recovers re-panic (IsConsumerPanic) and the
// run's Stream or Run re-raises as the consumer's own value once the run is
// stored (see settle).
func (st *state) deliver(e run.Event) (more bool) {
	done := false
	defer func() {
		if done {
			return
		}
		if p := recover(); p != nil {
			sp, ok := p.(*streamPanic)
			if !ok {
				sp = &streamPanic{value: p, st: st}
			}
			st.sink.stopped = true
			st.extras().consumerPanic = sp
			st.cancel(errStreamStopped)
			panic(sp)
		}
		// runtime.Goexit (a test's FailNow in the loop body) goes on.
	}()
	more = st.sink.yield(e, nil)
	done = true
	return more
}

// streamPanic is a stream consumer's panic (value) on its way back to the
// consumer, through the run st whose consumer panicked (and, for a member
// forwarding its events to its team's stream, through the member's run).
type streamPanic struct {
	value any
	st    *state
}

func (sp *streamPanic) String() string {
	return fmt.Sprintf("agent: stream consumer panicked: %v", sp.value)
}

// IsConsumerPanic reports whether v, a recovered panic value, is the panic
// of a run's stream consumer passing through the code that recovered it (a
// tool or a team member forwarding events with Emit runs the consumer's
// loop body on its own stack). Such a panic is not a failure of that code:
// recover must panic again with v unchanged, so that the run is stored and
// the consumer gets its own panic back.
func IsConsumerPanic(v any) bool {
	_, ok := v.(*streamPanic)
	return ok
}

// settle ends a run that a panic (p, recovered) is unwinding and returns
// what to panic with next: a stream consumer's panic (deliver) stores the run
// CANCELLED, unless it was stored already, and goes on as the consumer's own
// value when the consumer is this run's, as the *streamPanic otherwise (a
// member forwarding to its team's consumer). Any other panic goes on
// unchanged.
func (st *state) settle(p any) any {
	sp, ok := p.(*streamPanic)
	if !ok {
		return p
	}
	st.sink.stopped = true
	if !st.saved {
		st.cancel(errStreamStopped)
		st.finishCancelled()
	}
	if sp.st == st {
		return sp.value
	}
	return sp
}

// guard runs body, the run, settling a stream consumer's panic that
// unwinds it or that a recover swallowed.
func (st *state) guard(body func()) {
	defer func() {
		if p := recover(); p != nil {
			panic(st.settle(p))
		}
	}()
	body()
	if sp := st.consumerPanicked(); sp != nil {
		panic(sp) // settled above
	}
}

// consumerPanicked returns the stream consumer's panic that a recover the
// run does not control swallowed (a tool's own recover, a team's member
// call): nil when there is none.
func (st *state) consumerPanicked() *streamPanic {
	if st.ext == nil {
		return nil
	}
	return st.ext.consumerPanic
}
