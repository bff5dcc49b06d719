package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/agentryhq/agentry/internal/lossless"
	"github.com/agentryhq/agentry/model"
)

// SessionMetricsKey is the session_data member holding a session's metrics.
const SessionMetricsKey = "session_metrics"

// SessionMetrics are a session's tokens summed over its runs: Agno's
// SessionMetrics, stored as session_data.session_metrics. Each run adds its
// own tokens and, for a team run, those of every member run it delegated to
// (nested teams' members too), per model as in Metrics.Details. Timings are
// not summed: a session has no duration. Stored members it does not model
// (audio tokens, additional_metrics, …) are kept in Extra, untouched.
type SessionMetrics struct {
	model.Usage
	Details map[string][]ModelMetrics `json:"details,omitempty"`

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`
}

type sessionMetrics SessionMetrics

// MarshalJSON writes the metrics with Extra.
func (m SessionMetrics) MarshalJSON() ([]byte, error) {
	if b, ok := appendPlainSessionMetrics(make([]byte, 0, 256), &m); ok {
		return b, nil
	}
	return lossless.Marshal((*sessionMetrics)(&m), m.Extra)
}

// UnmarshalJSON reads stored metrics, keeping what it does not model in Extra.
func (m *SessionMetrics) UnmarshalJSON(b []byte) error {
	if json.Valid(b) {
		if v, ok := decodePlainSessionMetrics(b); ok {
			*m = v
			return nil
		}
	}
	var v sessionMetrics
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	*m = SessionMetrics(v)
	return nil
}

// Counts reports whether m counts a token or a cost: adding it to a
// session's metrics changes more than the models they list (a model that
// answered with no token count).
func (m *SessionMetrics) Counts() bool {
	if m.Usage != (model.Usage{}) {
		return true
	}
	for _, list := range m.Details {
		for i := range list {
			if list[i].Usage != (model.Usage{}) {
				return true
			}
		}
	}
	return false
}

// AddRun adds a run's metrics (nil adds nothing): its tokens and cost, and
// its per-model details, matched by role, provider and id; a workflow run's
// are its steps' (metrics.steps), as Agno sums them.
func (m *SessionMetrics) AddRun(r *Metrics) { m.addRun(r, 0) }

func (m *SessionMetrics) addRun(r *Metrics, depth int) {
	if r == nil || depth >= maxMemberDepth {
		return
	}
	m.add(r.Usage, r.Details, 1)
	if len(r.Steps) == 0 {
		return // an agent's or a team's run: nothing to sort
	}
	for _, name := range slices.Sorted(maps.Keys(r.Steps)) {
		// A nested workflow's step metrics hold its own steps'.
		m.addRun(r.Steps[name].Metrics, depth+1)
	}
}

// Add adds o to m.
func (m *SessionMetrics) Add(o *SessionMetrics) { m.add(o.Usage, o.Details, 1) }

// Since is what m, a run's share, adds over counted, what its session
// already counted of the run (a continued run's earlier legs; nil:
// nothing): a new value, m unchanged. Per-model entries stay listed.
func (m *SessionMetrics) Since(counted *SessionMetrics) SessionMetrics {
	d := m.clone()
	if counted != nil {
		d.add(counted.Usage, counted.Details, -1)
	}
	return d
}

func (m *SessionMetrics) add(u model.Usage, details map[string][]ModelMetrics, sign int) {
	m.Usage = addUsage(m.Usage, u, sign)
	for role, list := range details {
		for _, mm := range list {
			m.addModel(role, mm, sign)
		}
	}
}

// addModel adds (sign 1) or takes away (-1) one model's tokens under role;
// a model not listed yet is listed by adding, as Agno lists every model
// that answered, even with no token count.
func (m *SessionMetrics) addModel(role string, mm ModelMetrics, sign int) {
	list := m.Details[role]
	for i := range list {
		if list[i].ID == mm.ID && list[i].Provider == mm.Provider {
			list[i].Usage = addUsage(list[i].Usage, mm.Usage, sign)
			return
		}
	}
	if sign < 0 {
		return // nothing of it was counted
	}
	if m.Details == nil {
		m.Details = make(map[string][]ModelMetrics, 1)
	}
	// provider_metrics and the like are the run's, not the session's.
	m.Details[role] = append(list, ModelMetrics{ID: mm.ID, Provider: mm.Provider, Usage: addUsage(model.Usage{}, mm.Usage, 1)})
}

// addUsage is a+sign*b over the counts and the cost; timings are left out.
func addUsage(a, b model.Usage, sign int) model.Usage {
	a.InputTokens += sign * b.InputTokens
	a.OutputTokens += sign * b.OutputTokens
	a.TotalTokens += sign * b.TotalTokens
	a.CacheReadTokens += sign * b.CacheReadTokens
	a.CacheWriteTokens += sign * b.CacheWriteTokens
	a.ReasoningTokens += sign * b.ReasoningTokens
	a.Cost += float64(sign) * b.Cost
	a.Duration, a.TimeToFirstToken = 0, 0
	return a
}

// RunShare is what a run adds to its session's metrics: its own metrics and
// those of the member runs in members (a team run's member_responses, as
// stored: each may hold its own member_responses, counted too). A member
// that does not decode is counted as nothing.
func RunShare(own *Metrics, members []json.RawMessage) SessionMetrics {
	var s SessionMetrics
	s.AddRun(own)
	s.addMembers(members, 0)
	return s
}

// maxMemberDepth bounds the nesting RunShare follows (teams of teams,
// workflows of workflows).
const maxMemberDepth = 32

func (m *SessionMetrics) addMembers(members []json.RawMessage, depth int) {
	if depth >= maxMemberDepth {
		return
	}
	for _, raw := range members {
		var mr struct {
			Metrics *Metrics          `json:"metrics"`
			Members []json.RawMessage `json:"member_responses"`
		}
		if json.Unmarshal(raw, &mr) != nil {
			continue
		}
		m.AddRun(mr.Metrics)
		m.addMembers(mr.Members, depth+1)
	}
}

// AddSessionMetrics returns the stored session_metrics value with add added
// to it. Empty or null stored metrics start from nothing; what the stored
// metrics hold that SessionMetrics does not model is kept. Stored metrics
// that are not an object are an error (nothing is to be written over them).
func AddSessionMetrics(stored json.RawMessage, add *SessionMetrics) (json.RawMessage, error) {
	var sm SessionMetrics
	if len(bytes.TrimSpace(stored)) > 0 { // null leaves sm empty
		// Called directly: json.Unmarshal and json.Marshal would each scan
		// the value once more.
		if err := sm.UnmarshalJSON(stored); err != nil {
			return nil, fmt.Errorf("run: %s: %w", SessionMetricsKey, err)
		}
	}
	sm.Add(add)
	return sm.MarshalJSON()
}

// clone returns a copy of m that shares nothing with it.
func (m *SessionMetrics) clone() SessionMetrics {
	c := SessionMetrics{Usage: m.Usage, Extra: maps.Clone(m.Extra)}
	if m.Details != nil {
		c.Details = make(map[string][]ModelMetrics, len(m.Details))
		for role, list := range m.Details {
			c.Details[role] = append([]ModelMetrics(nil), list...)
		}
	}
	return c
}

// UpdateSessionData returns the session_data object data with state as its
// session_state (nil: unchanged) and add added to its session_metrics, as
// Agno writes them with every run ({} at least); its other members are kept
// as stored, numbers as written. Data that is not an object is replaced
// when there is a state to store, and left as it is otherwise. When nothing
// would change but, at most, the listing of a model that answered with no
// token count, data is returned as it is (no session write is worth it).
// Stored session_metrics that cannot be added to (not an object) are left
// as they are and kept says why; the rest is updated.
func UpdateSessionData(data json.RawMessage, state map[string]any, add *SessionMetrics) (out json.RawMessage, kept, err error) {
	if state == nil && !add.Counts() && bytes.Contains(data, []byte(`"`+SessionMetricsKey+`"`)) {
		return data, nil, nil
	}
	obj, err := lossless.ParseObject(data)
	if err != nil {
		if state == nil {
			return data, nil, nil
		}
		obj = lossless.Object{} // not an object: the state replaces it
	}
	stored, _ := obj.Member(SessionMetricsKey)
	set := make([]lossless.Field, 0, 2)
	if state != nil {
		b, err := json.Marshal(state)
		if err != nil {
			return nil, nil, err
		}
		set = append(set, lossless.Field{Name: "session_state", Value: b})
	}
	if b, err := AddSessionMetrics(stored, add); err == nil {
		set = append(set, lossless.Field{Name: SessionMetricsKey, Value: b})
	} else {
		kept = err
	}
	out, err = obj.With(set...)
	return out, kept, err
}
