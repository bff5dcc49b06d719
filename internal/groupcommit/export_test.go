package groupcommit

// State reports whether a caller leads a group and how many operations
// wait for the next one (for the tests: callers use Busy).
func (g *Group[T]) State() (leading bool, pending int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leading, len(g.pending)
}
