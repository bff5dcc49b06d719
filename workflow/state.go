package workflow

import (
	"maps"
	"sync"
)

// State is a workflow session's state (Agno's session_state): read and
// written by the steps of a run, also parallel ones, and stored with the
// session when the run ends or pauses. Safe for concurrent use.
type State struct {
	mu sync.Mutex
	m  map[string]any
}

func newState(m map[string]any) *State {
	if m == nil {
		m = map[string]any{}
	}
	return &State{m: m}
}

// Get returns the value of key.
func (s *State) Get(key string) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok
}

// Set sets key to v.
func (s *State) Set(key string, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = v
}

// Update calls fn with the state map, holding the lock: read-modify-write
// without racing a parallel step.
func (s *State) Update(fn func(m map[string]any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.m)
}

// Snapshot returns a shallow copy of the state.
func (s *State) Snapshot() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.m)
}
