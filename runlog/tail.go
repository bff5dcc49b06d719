package runlog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"
)

// TailConfig tunes Tail; zero values take the defaults.
type TailConfig struct {
	// Poll is how often the table is read while no append in this process
	// woke the tail (events written by another replica). Default 200ms.
	Poll time.Duration
	// Page is how many events are read at once: a subscriber holds at most
	// one page in memory. Default 256.
	Page int
	// KeepAlive is how long the tail may stay silent before it yields an
	// idle record (Seq -1) for the caller's keep-alive. Default 15s.
	KeepAlive time.Duration
	// Grace is how long a run that is over may still add events (its last
	// attempt's last batch in flight, written by another replica) before
	// the tail ends without that attempt's final event. Default 1s.
	Grace time.Duration
}

func (c TailConfig) withDefaults() TailConfig {
	if c.Poll <= 0 {
		c.Poll = 200 * time.Millisecond
	}
	if c.Page <= 0 {
		c.Page = 256
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = 15 * time.Second
	}
	if c.Grace <= 0 {
		c.Grace = time.Second
	}
	return c
}

// Idle is the record Tail yields when it kept silent for KeepAlive.
const Idle = -1

// ErrIndexPastEnd: a tail or read was asked to start after an index the
// run's log never reached (more than the number of events stored).
var ErrIndexPastEnd = errors.New("runlog: event index past the end of the run's log")

// ErrLogDeleted: the run's events were deleted (retention, or the
// session's deletion) while a tail was reading them.
var ErrLogDeleted = errors.New("runlog: the run's events were deleted while they were read")

// ErrNoEnd: Tail was given no ended func, so it could never tell a run's
// last attempt from an earlier one.
var ErrNoEnd = errors.New("runlog: a tail needs an ended func (whether the run's row is final and nothing can append)")

// End is what a tail's ended func tells of a run from its stored state.
type End struct {
	// Over: the run's row is final and no attempt will start (its job, if
	// any, is final: the queue will not retry it).
	Over bool
	// Attempt is the run's last attempt (its job's attempt when the job
	// turned final), whose final event ends the run; 0 when the run has no
	// attempts to tell apart (any final event ends it). An attempt on
	// another replica lands its last batch a moment after its job turned
	// final: a final event of an earlier attempt is not the end then.
	Attempt int
}

// EndsAt reports whether r is the end of a run that is over: a final event
// of its last attempt (or one a server built from the row, attempt 0).
func (e End) EndsAt(r Record) bool {
	return e.Over && r.Final && (e.Attempt == 0 || r.Attempt == 0 || r.Attempt >= e.Attempt)
}

// Tail yields the run's events after seq `after` (-1: from the first), as
// they are stored by any process, until the run is over; then it ends.
//
// ended reports whether the run is over by its stored state (End): final,
// and no attempt can add events (the queue will not retry it), and which
// attempt was its last. A final event is not the end by itself: an attempt
// the durable queue retries ends with its own terminal event (RunError) and
// the next attempt's events follow it, and the last attempt's final batch
// may land just after its job turned final (written by another replica).
// So the tail ends after a final event once ended reports the run over,
// the event is the last attempt's (End.EndsAt) and a read after that found
// nothing new; a run over without such an event (its producer died and
// the queue finished it) ends the tail once Grace passed with nothing new.
//
// after must be -1 or an index the log reached: at most the number of
// events stored (that number is the id of a terminal event a server built
// from the row); a larger one is ErrIndexPastEnd, below -1 ErrBadIndex.
// A log deleted while the tail reads it (retention) is ErrLogDeleted.
//
// Each event is yielded once, in order; breaking out of the loop stops the
// tail. An error is yielded once and ends it.
func (l *Log) Tail(ctx context.Context, runID string, after int64, ended func(context.Context) (End, error), cfg TailConfig) iter.Seq2[Record, error] {
	cfg = cfg.withDefaults()
	return func(yield func(Record, error) bool) {
		fail := func(err error) {
			if ctx.Err() == nil {
				yield(Record{}, err)
			}
		}
		switch {
		case ended == nil:
			fail(ErrNoEnd)
			return
		case after < -1:
			fail(fmt.Errorf("%w: %d (-1 reads from the first event)", ErrBadIndex, after))
			return
		}
		stop := l.follow(runID)
		defer stop()
		// known is how many events the log held at least: it only grows,
		// but for a deletion (all of a run's events at once). at: the last
		// event yielded (or the one at after); atFinal: it is a final one.
		var known int64
		var at Record
		atFinal := false
		if after >= 0 {
			rec, ok, err := l.Last(ctx, runID)
			if err != nil {
				fail(err)
				return
			}
			if ok {
				known = rec.Seq + 1
				atFinal = rec.Seq == after && rec.Final
				if atFinal {
					at = rec
				}
			}
			if after > known {
				// known itself is the id of a terminal event built from
				// the row.
				fail(fmt.Errorf("%w: run %s has %d events stored, index %d was never sent (or the log was deleted by retention)", ErrIndexPastEnd, runID, known, after))
				return
			}
		}
		last := after
		poll := time.NewTimer(cfg.Poll)
		defer poll.Stop()
		quiet := time.Now()
		var endedAt time.Time
		// overAtFinal: the run was over after a final event, so a read
		// that finds nothing ends the tail.
		overAtFinal := false
		for {
			// Take the wake-up channel before reading, so an append between
			// the read and the wait is not missed.
			woke := l.woken(runID)
			recs, err := l.Read(ctx, runID, last, cfg.Page)
			if err != nil {
				fail(err)
				return
			}
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
				last, atFinal, at = r.Seq, r.Final, r
				known = max(known, r.Seq+1)
			}
			if len(recs) > 0 {
				quiet, endedAt, overAtFinal = time.Now(), time.Time{}, false
				if len(recs) == cfg.Page {
					continue
				}
			} else if overAtFinal {
				return
			}
			if len(recs) == 0 || atFinal {
				// Nothing new, or the events so far end with a final one:
				// is the run over, or may another attempt append?
				end, err := ended(ctx)
				if err != nil {
					fail(err)
					return
				}
				switch {
				case !end.Over:
					endedAt = time.Time{}
				case atFinal && end.EndsAt(at):
					// Read once more at once: an attempt may have appended
					// between the read and ended.
					overAtFinal = true
					continue
				case endedAt.IsZero():
					endedAt = time.Now()
				case time.Since(endedAt) >= cfg.Grace:
					// Ending without the last attempt's final event: tell a
					// log that was deleted under the reader from one that
					// stopped.
					n, err := l.stored(ctx, runID)
					switch {
					case err != nil:
						fail(err)
					case n < known:
						fail(fmt.Errorf("%w: run %s had %d events, %d remain; the rest of the run is on its row", ErrLogDeleted, runID, known, n))
					}
					return
				}
				if time.Since(quiet) >= cfg.KeepAlive {
					quiet = time.Now()
					if !yield(Record{Seq: Idle}, nil) {
						return
					}
				}
			}
			poll.Reset(cfg.Poll)
			select {
			case <-ctx.Done():
				return
			case <-woke:
			case <-poll.C:
			}
		}
	}
}

// stored returns how many events the run's log holds (numbering is
// gapless: the last one's seq + 1).
func (l *Log) stored(ctx context.Context, runID string) (int64, error) {
	rec, ok, err := l.Last(ctx, runID)
	if err != nil || !ok {
		return 0, err
	}
	return rec.Seq + 1, nil
}
