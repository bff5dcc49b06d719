package sqlstore

import "context"

// writeGate queues run and session writes to SQLite's single writer
// connection in arrival order. database/sql hands a freed connection to an
// arbitrary waiter, so under load a write could wait behind any number of
// later ones: the latency tail, not the throughput, suffers. Goroutines
// blocked sending on a channel are woken first in, first out.
type writeGate chan struct{}

func newWriteGate(d *Dialect) writeGate {
	if d.Name != SQLite {
		return nil // pooled writers: the database orders its own locks
	}
	return make(writeGate, 1)
}

// enter waits for the gate; leave must follow when it returns nil.
func (g writeGate) enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g writeGate) leave() {
	if g != nil {
		<-g
	}
}
