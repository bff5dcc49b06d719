package runlog

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// flushEvery is how long an event may wait in a recorder before it is
// written; a run's terminal event is written at once.
const flushEvery = 50 * time.Millisecond

// maxBatch events in a recorder are written without waiting.
const maxBatch = 256

// A recorder holds at most maxPending events or maxPendingBytes of their
// JSON while its writes stall (a slow or locked database): past that it
// drops the attempt's later events, but the run's terminal event, rather
// than grow without bound or make the run wait. The first pending event
// does not count towards the bytes: one event larger than the bound (a
// tool's big result) is stored, not taken for a stall.
const (
	maxPending      = 4096
	maxPendingBytes = 8 << 20
)

// Recorder writes one attempt's events of a run to the log in batches. Add
// never waits on the database: events are buffered and written by a
// flusher every flushEvery (or at once past maxBatch or at the run's
// terminal event, which Add then waits for so that a reader of the final
// run row finds the event stored). Close writes what is left.
//
// While writes stall the buffer is bounded (maxPending events,
// maxPendingBytes): once it is full, the attempt's later events are
// dropped, except its terminal event, so the log holds the run's
// beginning and its end (whose RunCompleted carries the whole content)
// without a hole in the middle; Close logs one warning with the number
// dropped.
type Recorder struct {
	l       *Log
	runID   string
	attempt int
	fence   db.TxFunc
	ctx     context.Context
	log     *slog.Logger

	mu       sync.Mutex
	buf      []Pending
	bufBytes int // JSON bytes of buf but its first event
	enc      *json.Encoder
	scratch  bytes.Buffer
	failed   error
	dropped  int  // events dropped because the buffer was full
	full     bool // the buffer filled: later events but the terminal one are dropped
	closed   bool
	late     bool // an event was added after Close (warned once)
	kick     chan struct{}
	done     chan struct{}
	stopped  chan struct{} // closed when the flusher returned
	wmu      sync.Mutex    // one write at a time, in order

	closeOnce sync.Once
	closeErr  error // set by the first Close
}

// Record starts a recorder of runID's events by attempt. Writes use ctx's
// values (and db.WriteFence(ctx)) but not its cancellation: the last events
// of a cancelled run are still written.
func (l *Log) Record(ctx context.Context, runID string, attempt int, logger *slog.Logger) *Recorder {
	if logger == nil {
		logger = slog.Default()
	}
	r := &Recorder{l: l, runID: runID, attempt: attempt, fence: db.WriteFence(ctx), ctx: context.WithoutCancel(ctx), log: logger,
		kick: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	r.enc = json.NewEncoder(&r.scratch)
	r.enc.SetEscapeHTML(false)
	go r.flusher()
	return r
}

// Add buffers one event (safe from the run's goroutine: it does not block
// on subscribers, only on the database for the run's terminal event).
// After Close it does nothing: the event is not stored (a warning is
// logged once).
func (r *Recorder) Add(ev run.Event) {
	r.mu.Lock()
	if r.closed {
		late := !r.late
		r.late = true
		r.mu.Unlock()
		if late {
			r.log.Warn("runlog: event added after the recorder was closed is not stored", "run_id", r.runID, "attempt", r.attempt, "event", ev.Event)
		}
		return
	}
	final := ev.RunID == r.runID && run.IsTerminal(ev.Event)
	if r.full && !final {
		r.dropped++
		r.mu.Unlock()
		return
	}
	r.scratch.Reset()
	if err := r.enc.Encode(&ev); err != nil {
		r.mu.Unlock()
		r.log.Warn("runlog: encode event", "run_id", r.runID, "event", ev.Event, "err", err)
		return
	}
	data := bytes.TrimSuffix(r.scratch.Bytes(), []byte("\n"))
	if !final && len(r.buf) > 0 && (len(r.buf) >= maxPending || r.bufBytes+len(data) > maxPendingBytes) {
		r.full = true
		r.dropped++
		r.mu.Unlock()
		return
	}
	if len(r.buf) > 0 {
		r.bufBytes += len(data)
	}
	r.buf = append(r.buf, Pending{Event: string(ev.Event), Data: bytes.Clone(data), Final: final})
	n := len(r.buf)
	r.mu.Unlock()
	switch {
	case final:
		r.flush()
	case n >= maxBatch:
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

func (r *Recorder) flusher() {
	defer close(r.stopped)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
		case <-r.kick:
		}
		r.flush()
	}
}

// flush writes the buffered events. A write refused by the fence (the
// attempt lost the run) or failing drops them: the log keeps only what an
// owning attempt stored, and its numbering has no gap.
func (r *Recorder) flush() {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.mu.Lock()
	batch := r.buf
	r.buf, r.bufBytes = nil, 0
	failed := r.failed
	r.mu.Unlock()
	if len(batch) == 0 || failed != nil {
		return
	}
	if err := r.l.Append(r.ctx, r.runID, r.attempt, batch, r.fence); err != nil {
		r.mu.Lock()
		r.failed = err
		r.mu.Unlock()
		r.log.Warn("runlog: store events; later events of this attempt are dropped", "run_id", r.runID, "attempt", r.attempt, "err", err)
	}
}

// Close writes the remaining events and stops the flusher. It returns the
// first write error (nil when every event was stored, but those dropped
// because the buffer was full, which it logs). Closing again does nothing
// and returns the same error; Add after Close stores nothing.
func (r *Recorder) Close() error {
	r.closeOnce.Do(r.close)
	return r.closeErr
}

func (r *Recorder) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	close(r.done)
	<-r.stopped
	r.flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeErr = r.failed
	if r.dropped > 0 {
		r.log.Warn("runlog: the database kept up too slowly; events of this attempt were dropped (its terminal event was kept)",
			"run_id", r.runID, "attempt", r.attempt, "dropped", r.dropped)
	}
}
