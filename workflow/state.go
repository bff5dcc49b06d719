package workflow

import "sync"

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

// Snapshot returns a copy of the state that is the caller's own: the maps
// and slices of JSON values in it (map[string]any, []any) are copied at
// every depth, so a parallel step changing a nested value with Update
// neither races a reader of a snapshot nor changes it. Other values (a
// struct or a pointer a step stored) are shared.
func (s *State) Snapshot() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneMap(s.m)
}

// cloneMap copies m and the JSON maps and slices in it, at every depth.
func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneMap(v)
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}
