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

// Recorder writes one attempt's events of a run to the log in batches. Add
// never waits on the database: events are buffered and written by a
// flusher every flushEvery (or at once past maxBatch or at the run's
// terminal event, which Add then waits for so that a reader of the final
// run row finds the event stored). Close writes what is left.
type Recorder struct {
	l       *Log
	runID   string
	attempt int
	fence   db.TxFunc
	ctx     context.Context
	log     *slog.Logger

	mu      sync.Mutex
	buf     []Pending
	enc     *json.Encoder
	scratch bytes.Buffer
	failed  error
	kick    chan struct{}
	done    chan struct{}
	wmu     sync.Mutex // one write at a time, in order
}

// Record starts a recorder of runID's events by attempt. Writes use ctx's
// values (and db.WriteFence(ctx)) but not its cancellation: the last events
// of a cancelled run are still written.
func (l *Log) Record(ctx context.Context, runID string, attempt int, logger *slog.Logger) *Recorder {
	if logger == nil {
		logger = slog.Default()
	}
	r := &Recorder{l: l, runID: runID, attempt: attempt, fence: db.WriteFence(ctx), ctx: context.WithoutCancel(ctx), log: logger,
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	r.enc = json.NewEncoder(&r.scratch)
	r.enc.SetEscapeHTML(false)
	go r.flusher()
	return r
}

// Add buffers one event (safe from the run's goroutine: it does not block
// on subscribers, only on the database for the run's terminal event).
func (r *Recorder) Add(ev run.Event) {
	r.mu.Lock()
	r.scratch.Reset()
	if err := r.enc.Encode(&ev); err != nil {
		r.mu.Unlock()
		r.log.Warn("runlog: encode event", "run_id", r.runID, "event", ev.Event, "err", err)
		return
	}
	data := bytes.Clone(bytes.TrimSuffix(r.scratch.Bytes(), []byte("\n")))
	final := ev.RunID == r.runID && run.IsTerminal(ev.Event)
	r.buf = append(r.buf, Pending{Event: string(ev.Event), Data: data, Final: final})
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
	r.buf = nil
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
// first write error (nil when every event was stored).
func (r *Recorder) Close() error {
	close(r.done)
	r.flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}
