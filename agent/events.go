package agent

import (
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
	if s.live() && !s.yield(e, nil) {
		s.stopped = true
		st.cancel(errStreamStopped)
	}
}
