package sqlstore

import (
	"context"
	"sync"
	"time"
)

// checkpointWrites is how many writes through the gate wake the background
// checkpoint: about 500 WAL frames at a run write's ~8, half the writer's
// automatic checkpoint threshold (SQLite's 1,000), so the copy is mostly
// done before the writer's own checkpoint comes.
const checkpointWrites = 64

// minRestartFrames is the least WAL length, in frames, past which the
// checkpointer empties the WAL instead of only copying it back (see
// Store.restartFrames).
const minRestartFrames = 2000

// checkpointer copies the WAL back into the database off the writes' path
// and returns the function that stops it and waits for the checkpoint in
// progress. It wakes every interval and, when the gate counts writes,
// every checkpointWrites writes.
//
// Each wake-up runs a PASSIVE checkpoint on the reader pool, which copies
// what no reader still needs back into the database, with its two fsyncs,
// without waiting for or blocking anyone. The sqlite driver raises the
// writer's automatic checkpoint (Config.WALAutoCheckpoint) when this runs:
// SQLite's automatic checkpoint runs on the writer inside the commit that
// crossed its threshold, so the turn that made that write paid for the
// copy and the fsyncs. The writer's own checkpoint still runs at the
// raised threshold and is what starts the WAL over (a steady stream of
// writes rarely leaves a gap between the copy and the next write); the
// frames it finds already copied cost it nothing.
//
// When a PASSIVE pass still finds the WAL longer than restartFrames (the
// writer's own checkpoint could not start it over: a reader held an old
// snapshot, or the automatic checkpoint is off), a TRUNCATE checkpoint
// follows on the writer connection, in turn with the writes (a checkpoint
// competing for the write lock from another connection starves under
// load): it waits, within the busy timeout, for readers to be done with the
// WAL, copies it and empties the file. Errors are retried at the next
// wake-up.
func (s *Store) checkpointer(interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wake chan struct{}
	if s.gate != nil {
		wake = make(chan struct{}, 1)
		s.gate.wake = wake // before any write: New has not returned the store yet
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-wake:
			}
			if frames, err := s.d.WALCheckpoint(ctx, s.r, false); err == nil && frames > s.restartFrames {
				s.truncateWAL(ctx)
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// truncateWAL runs a TRUNCATE checkpoint on the writer between two writes.
func (s *Store) truncateWAL(ctx context.Context) {
	if err := s.gate.enter(ctx); err != nil {
		return
	}
	defer s.gate.leaveUnwritten()
	_, _ = s.d.WALCheckpoint(ctx, s.w, true)
}
