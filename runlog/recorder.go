package runlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
// than grow without bound or make the run wait. The bounds count only while
// the events wait on the database (a write in flight or failing): events
// added while the flusher is idle are kept, and past a bound they start a
// write at once. The first pending event does not count towards the bytes,
// and the event that crosses the bytes bound is kept: one event larger than
// the bound (a tool's big result) is stored, not taken for a stall.
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
// A write that fails (a timeout, a lost connection, a locked database)
// does not lose its events: they are written again at the next flush, in
// front of those added since, numbered after the last stored event, so the
// log has no gap and no event twice. Only a write the queue's fence refuses
// (the attempt lost the run) drops the attempt's events, that one and
// every later one.
//
// While writes stall the buffer is bounded (maxPending events,
// maxPendingBytes): once it is full, the attempt's events are dropped,
// except its terminal event, until a write succeeds again; then recording
// resumes. Where events were dropped the log holds a gap marker instead (a
// CustomEvent whose content gives "events_dropped"; see GapEvent), so a
// reader learns of the loss; the run's terminal event (whose RunCompleted
// carries the whole content) is always kept. Close logs one warning with
// the number dropped.
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
	lost     error     // the fence refused a write: the attempt's events are dropped
	fails    int       // writes failed in a row (their events are kept and written again)
	dropped  int       // events dropped because the buffer was full
	gap      int       // events dropped since the last gap marker was buffered
	full     bool      // the buffer filled: events but the terminal one are dropped until a write succeeds
	writing  bool      // a write is in flight: events added meanwhile wait on the database
	ident    run.Event // the run's own last event: the gap marker's identity fields
	closed   bool
	late     bool // an event was added after Close (warned once)
	kick     chan struct{}
	done     chan struct{}
	stopped  chan struct{} // closed when the flusher returned
	wmu      sync.Mutex    // one write at a time, in order

	// A batch whose commit failed may have been stored all the same (the
	// connection was lost after the server committed): its first unsureN
	// events would have started at seq unsure. The next write looks first.
	// Guarded by wmu.
	unsure  int64
	unsureN int

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
	if ev.RunID == r.runID {
		r.ident = ev
	}
	if r.full && !final {
		r.gap++
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
	name := string(ev.Event)
	if limit := r.l.maxData(); limit > 0 && len(data)+len(name) > limit {
		// No write could store it (MySQL's max_allowed_packet; the write
		// counts the event's name with its JSON, as appendAt does): a
		// marker stands in for it rather than hold up the attempt's later
		// events.
		marker := TooLargeEvent(ev, r.ident, r.runID, len(data))
		name = string(marker.Event)
		big, err := json.Marshal(marker)
		if err != nil {
			r.mu.Unlock()
			r.log.Warn("runlog: encode the too-large marker", "run_id", r.runID, "err", err)
			return
		}
		r.log.Warn("runlog: event too large for the database; a marker is stored in its place", "run_id", r.runID, "event", ev.Event, "bytes", len(data), "limit", limit)
		data = big
	}
	if !final && len(r.buf) > 0 && (r.writing || r.fails > 0) && (len(r.buf) >= maxPending || r.bufBytes >= maxPendingBytes) {
		r.full = true
		r.gap++
		r.dropped++
		r.mu.Unlock()
		return
	}
	r.markGap()
	if len(r.buf) > 0 {
		r.bufBytes += len(data)
	}
	r.buf = append(r.buf, Pending{Event: name, Data: bytes.Clone(data), Final: final})
	n, over := len(r.buf), r.bufBytes >= maxPendingBytes
	r.mu.Unlock()
	switch {
	case final:
		r.flush()
	case n >= maxBatch || over:
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

// flush writes the buffered events and returns why they are not stored
// (nil: they are). A write refused by the fence (the attempt lost the run)
// drops them and all later ones: the log keeps only what an owning attempt
// stored. Any other failure keeps them, in order, in front of the events
// added since, for the next flush.
func (r *Recorder) flush() error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.mu.Lock()
	batch := r.buf
	r.buf, r.bufBytes = nil, 0
	lost := r.lost
	r.writing = lost == nil && len(batch) > 0
	r.mu.Unlock()
	if lost != nil {
		return lost
	}
	if len(batch) == 0 {
		return nil
	}
	defer func() {
		r.mu.Lock()
		r.writing = false
		r.mu.Unlock()
	}()
	if r.unsureN > 0 {
		// The earlier commit of these events may have gone through, or
		// may still (its connection is lost, not its transaction): they
		// are written again at the same seqs only, where a key of the
		// earlier write, committed or in flight, stops this one.
		head := batch[:r.unsureN]
		_, err := r.l.appendAt(r.ctx, r.runID, r.attempt, head, r.fence, r.unsure)
		switch {
		case err == nil:
		case errors.Is(err, ErrSeqMoved) || seqTaken(err):
			held, herr := r.l.holds(r.ctx, r.runID, r.attempt, r.unsure, head)
			if herr != nil {
				r.keep(batch, herr)
				return herr
			}
			if !held {
				// Others' events hold those seqs: ours were not stored.
				head = nil
			}
		case errors.Is(err, run.ErrFenced):
			return r.lose(err)
		default:
			r.keep(batch, err)
			return err
		}
		r.unsure, r.unsureN = 0, 0
		batch = batch[len(head):]
		if len(batch) == 0 {
			r.stored()
			return nil
		}
	}
	start, err := r.l.appendAt(r.ctx, r.runID, r.attempt, batch, r.fence, -1)
	switch {
	case err == nil:
		r.stored()
		return nil
	case errors.Is(err, run.ErrFenced):
		return r.lose(err)
	}
	if start >= 0 {
		r.unsure, r.unsureN = start, len(batch)
	}
	r.keep(batch, err)
	return err
}

// lose drops the attempt's events from now on: the fence refused a write.
func (r *Recorder) lose(err error) error {
	r.mu.Lock()
	r.lost = err
	r.mu.Unlock()
	r.log.Warn("runlog: the attempt lost the run; its later events are dropped", "run_id", r.runID, "attempt", r.attempt, "err", err)
	return err
}

// keep puts back the events of a failed write in front of those added
// since (they count towards the buffer's bounds: a long stall fills it).
func (r *Recorder) keep(batch []Pending, err error) {
	r.mu.Lock()
	r.buf = append(batch[:len(batch):len(batch)], r.buf...)
	r.bufBytes = 0
	for _, p := range r.buf[1:] {
		r.bufBytes += len(p.Data)
	}
	r.fails++
	first := r.fails == 1
	r.mu.Unlock()
	if first {
		r.log.Warn("runlog: store events failed; they are kept and written again", "run_id", r.runID, "attempt", r.attempt, "err", err)
	}
}

// markGap buffers the gap marker of the events dropped since the last one
// (if any), where they would have been. r.mu is held.
func (r *Recorder) markGap() {
	if r.gap == 0 {
		return
	}
	data, err := json.Marshal(GapEvent(r.ident, r.runID, r.gap))
	if err != nil {
		r.log.Warn("runlog: encode the gap marker", "run_id", r.runID, "err", err)
		return
	}
	if len(r.buf) > 0 {
		r.bufBytes += len(data)
	}
	r.buf = append(r.buf, Pending{Event: string(run.EventCustom), Data: data})
	r.gap = 0
}

// GapEvent is the marker a recorder stores where it dropped n events of
// runID because writes stalled and its buffer was full: a CustomEvent
// (Agno's name for an event a client may not know) with the run's identity
// fields (taken from ident, an event of the run) and content
// {"events_dropped": n, "message": …}.
func GapEvent(ident run.Event, runID string, n int) run.Event {
	return run.Event{Event: run.EventCustom, CreatedAt: time.Now().Unix(), RunID: runID, SessionID: ident.SessionID,
		AgentID: ident.AgentID, AgentName: ident.AgentName, TeamID: ident.TeamID, TeamName: ident.TeamName,
		WorkflowID: ident.WorkflowID, WorkflowName: ident.WorkflowName,
		Content: map[string]any{"events_dropped": n,
			"message": "the run's event log fell behind the database; events were dropped here (the run's final event and its stored output are complete)"}}
}

// TooLargeEvent is what a recorder stores in place of ev, an event of
// runID whose JSON (n bytes) is larger than the database takes in one
// statement: a run's terminal event keeps its name with the run's identity
// fields (the run's stored row holds its output); another becomes a
// CustomEvent. Its content is {"event_too_large": name, "bytes": n,
// "message": …}.
func TooLargeEvent(ev, ident run.Event, runID string, n int) run.Event {
	name := run.EventCustom
	if ev.RunID == runID && run.IsTerminal(ev.Event) {
		name = ev.Event
	}
	if ev.RunID != "" {
		ident = ev
	}
	return run.Event{Event: name, CreatedAt: ev.CreatedAt, RunID: ident.RunID, SessionID: ident.SessionID,
		AgentID: ident.AgentID, AgentName: ident.AgentName, TeamID: ident.TeamID, TeamName: ident.TeamName,
		WorkflowID: ident.WorkflowID, WorkflowName: ident.WorkflowName,
		Content: map[string]any{"event_too_large": ev.Event, "bytes": n,
			"message": "the event was larger than the database stores in one statement; it is not kept here (the run's stored output is complete)"}}
}

// stored notes a successful write: a full buffer takes events again (the
// next one is preceded by the gap marker), and a recovery after failed
// writes is logged.
func (r *Recorder) stored() {
	r.mu.Lock()
	n := r.fails
	r.fails = 0
	r.full = false
	r.mu.Unlock()
	if n > 0 {
		r.log.Info("runlog: events stored again after failed writes", "run_id", r.runID, "attempt", r.attempt, "failed_writes", n)
	}
}

// closeTries bounds Close's writes of what is left while they fail (each
// within the store's query timeout), closePause apart.
const (
	closeTries = 3
	closePause = 100 * time.Millisecond
)

// Close writes the remaining events and stops the flusher. It returns nil
// when every event was stored (but those dropped because the buffer was
// full, which it logs), the fence's error when the attempt lost the run,
// or the last write's error when events are still not stored after
// closeTries writes (it logs how many). Closing again does nothing and
// returns the same error; Add after Close stores nothing.
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
	r.mu.Lock()
	r.markGap() // events dropped at the end, with no event after them
	r.mu.Unlock()
	err := r.flush()
	for try := 1; err != nil && try < closeTries && !errors.Is(err, run.ErrFenced); try++ {
		time.Sleep(closePause)
		err = r.flush()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeErr = err
	if err != nil && r.lost == nil {
		r.log.Warn("runlog: events of this attempt could not be stored", "run_id", r.runID, "attempt", r.attempt, "lost", len(r.buf), "err", err)
	}
	if r.dropped > 0 {
		r.log.Warn("runlog: the database kept up too slowly; events of this attempt were dropped (gap markers stand in for them, its terminal event was kept)",
			"run_id", r.runID, "attempt", r.attempt, "dropped", r.dropped)
	}
}
