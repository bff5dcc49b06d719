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

func (st *state) ev(t run.EventType) run.Event {
	e := run.Event{
		Event:     t,
		CreatedAt: time.Now().Unix(),
		AgentID:   st.out.AgentID,
		AgentName: st.out.AgentName,
		RunID:     st.out.RunID,
		SessionID: st.out.SessionID,
	}
	if st.p.team != nil {
		e.Event = run.TeamEvent(t)
		e.TeamID, e.TeamName = st.out.TeamID, st.out.TeamName
	}
	return e
}

// isDelta reports whether t is a content delta (never stored), for agents
// and teams alike.
func isDelta(t run.EventType) bool {
	switch t {
	case run.EventRunContent, run.EventReasoningContentDelta,
		run.TeamEvent(run.EventRunContent), run.TeamEvent(run.EventReasoningContentDelta):
		return true
	}
	return false
}

func (st *state) emit(e run.Event) {
	st.record(e)
	st.send(e)
}

// record keeps e in the run's stored events when StoreEvents is set.
func (st *state) record(e run.Event) {
	if st.sink.store && !isDelta(e.Event) {
		st.out.Events = append(st.out.Events, e)
	}
}

// send delivers e to a live stream consumer.
func (st *state) send(e run.Event) {
	s := &st.sink
	if s.debug != nil && !deltaEvent(e.Event) {
		s.debug.trace(st, &e)
	}
	if s.live() && !s.yield(e, nil) {
		s.stopped = true
		st.cancel(errStreamStopped)
	}
}
