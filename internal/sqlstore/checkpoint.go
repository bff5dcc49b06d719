package sqlstore

import (
	"context"
	"sync"
	"time"
)

// checkpointRestartFrames is the WAL length, in frames, past which the
// periodic checkpoint empties the WAL instead of only copying it back:
// twice the 1,000 pages after which SQLite checkpoints on its own.
const checkpointRestartFrames = 2000

// checkpointEvery checkpoints the WAL every interval and returns the
// function that stops it and waits for the checkpoint in progress.
//
// Each tick runs a PASSIVE checkpoint on the reader pool, which copies what
// no reader still needs back into the database without waiting for or
// blocking anyone. The writer starts the WAL over only when it finds it
// fully copied between two transactions, which a steady stream of writes
// can keep from ever happening; so when the WAL is still longer than
// checkpointRestartFrames, a TRUNCATE checkpoint follows on the writer
// connection, in turn with the writes (a checkpoint competing for the write
// lock from another connection starves under load): it waits, within the
// busy timeout, for readers to be done with the WAL, copies it and empties
// the file. Errors are retried at the next tick.
func (s *Store) checkpointEvery(interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
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
				if frames, err := s.d.WALCheckpoint(ctx, s.r, false); err == nil && frames > checkpointRestartFrames {
					s.truncateWAL(ctx)
				}
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
	defer s.gate.leave()
	_, _ = s.d.WALCheckpoint(ctx, s.w, true)
}
