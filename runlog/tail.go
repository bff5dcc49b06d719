package runlog

import (
	"context"
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
	// Grace is how long a run whose row is final may still add events (its
	// last batch in flight) before the tail ends without a final event.
	// Default 1s.
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

// Tail yields the run's events after seq `after` (-1: from the first), as
// they are stored by any process, until the run's final event; then it
// ends. ended reports whether the run is over by its stored row (a run
// whose producer died is finished by the queue without a final event): the
// tail then ends once Grace passed with nothing new. Each event is yielded
// once, in order; breaking out of the loop stops the tail. A read error is
// yielded and ends it.
func (l *Log) Tail(ctx context.Context, runID string, after int64, ended func(context.Context) (bool, error), cfg TailConfig) iter.Seq2[Record, error] {
	cfg = cfg.withDefaults()
	return func(yield func(Record, error) bool) {
		stop := l.follow(runID)
		defer stop()
		last := after
		poll := time.NewTimer(cfg.Poll)
		defer poll.Stop()
		quiet := time.Now()
		var endedAt time.Time
		for {
			// Take the wake-up channel before reading, so an append between
			// the read and the wait is not missed.
			woke := l.woken(runID)
			recs, err := l.Read(ctx, runID, last, cfg.Page)
			if err != nil {
				if ctx.Err() == nil {
					yield(Record{}, err)
				}
				return
			}
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
				last = r.Seq
				if r.Final {
					return
				}
			}
			if len(recs) > 0 {
				quiet, endedAt = time.Now(), time.Time{}
				if len(recs) == cfg.Page {
					continue
				}
			} else {
				over, err := ended(ctx)
				if err != nil {
					if ctx.Err() == nil {
						yield(Record{}, err)
					}
					return
				}
				switch {
				case !over:
					endedAt = time.Time{}
				case endedAt.IsZero():
					endedAt = time.Now()
				case time.Since(endedAt) >= cfg.Grace:
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
