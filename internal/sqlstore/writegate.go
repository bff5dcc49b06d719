package sqlstore

import "context"

// writeGate queues run and session writes to SQLite's single writer
// connection in arrival order. database/sql hands a freed connection to an
// arbitrary waiter, so under load a write could wait behind any number of
// later ones: the latency tail, not the throughput, suffers. Goroutines
// blocked sending on a channel are woken first in, first out.
type writeGate chan struct{}

func newWriteGate(d *Dialect) writeGate {
	if !d.SingleWriter {
		return nil // pooled writers: the database orders its own locks
	}
	return make(writeGate, 1)
}

// enter waits for the gate; leave must follow when it returns nil.
func (g writeGate) enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	if g.tryEnter() { // an idle gate does not ask ctx for Done (db's query deadline starts its timer then)
		return nil
	}
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tryEnter enters the gate if no one holds it; leave must follow when it
// returns true.
func (g writeGate) tryEnter() bool {
	if g == nil {
		return false
	}
	select {
	case g <- struct{}{}:
		return true
	default:
		return false
	}
}

func (g writeGate) leave() {
	if g != nil {
		<-g
	}
}

// gated is the context of the statements of a write that entered the gate.
// On SQLite the gate made the single writer connection this write's, so
// the waits a caller's deadline bounds are over; a context that can still
// end would only make the driver watch every statement with a goroutine of
// its own (modernc interrupts a statement whose context ends), which cost
// more than the statements of a small write. A wait for another process's
// lock stays bounded by busy_timeout (sqlite.Open caps it at the query
// timeout). Pooled writers keep the caller's context: their statements
// cross a network.
func (s *Store) gated(ctx context.Context) context.Context {
	if s.gate == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
