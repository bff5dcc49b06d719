package agentos

import (
	"cmp"
	"context"
	"errors"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/agentryhq/agentry/run"
)

// Cancellation causes of runs the server stops.
var (
	// errServerShutdown cancels the runs still going when the shutdown timeout ends.
	errServerShutdown = errors.New("the server shut down before the run finished")
	// errCancelRoute cancels a run through POST …/runs/{run_id}/cancel.
	errCancelRoute = errors.New("cancelled through the cancel route")
	// errRunInFlight: a run id is already executing in this process (started
	// by the server or by Go code).
	errRunInFlight = run.ErrAlreadyRunning
	// errDraining: the server is shutting down and starts no new runs.
	errDraining = errors.New("agentos: the server is shutting down")
)

// Background run bounds: at most backgroundWorkers execute at once; at most
// backgroundQueue more wait for a worker (beyond that, 429); the server's
// config may change both.
const (
	backgroundWorkers = 32
	backgroundQueue   = 4096
)

// runner tracks the runs this server executes (streamed, synchronous and
// background) for shutdown (drain, wait), the background workers and the
// RUNNING snapshots of sessions not stored yet. Cancellation is not its
// business: every run is registered in the run registry (run.Registry, the
// process's default), which the cancel route consults; runs started from Go
// code on the same components are registered there too. Background runs
// execute on a bounded set of goroutines tied to the server's lifetime; they
// are not crash-durable (with queue.durable the durable queue, queue.go, runs
// them instead): a process that dies leaves them PENDING or RUNNING, and the
// cancel route can then mark them CANCELLED.
type runner struct {
	// reg is where runs are registered for cancellation.
	reg run.Registry
	// life ends when shutdown gives up waiting; every run's context follows it.
	life context.Context
	stop context.CancelCauseFunc
	// slots bounds concurrently executing background runs; depth bounds
	// those waiting for a slot.
	slots chan struct{}
	depth int

	mu       sync.Mutex
	flights  map[string]*flight
	queued   int // background runs waiting for a slot or executing
	draining bool
	// changed, when non-nil, is closed (and cleared) when a flight ends; a
	// waiter creates it.
	changed chan struct{}

	// idem serialises idempotent background submissions by key hash, so
	// concurrent duplicates see each other's PENDING row.
	idem     [64]sync.Mutex
	idemSeed maphash.Seed
}

// flight is one run in progress.
type flight struct {
	userID     string
	background bool
	// shown, when set, is what readers see of the run while its session is
	// not stored yet (a RUNNING snapshot; see inSession). Never modified.
	shown  *run.Output
	cancel context.CancelCauseFunc
	unlink func() bool
	// unregister ends the run's registration in the run registry.
	unregister func()
}

func newRunner(workers, depth int) *runner {
	if workers <= 0 {
		workers = backgroundWorkers
	}
	if depth <= 0 {
		depth = backgroundQueue
	}
	life, stop := context.WithCancelCause(context.Background())
	return &runner{reg: run.DefaultRegistry(), life: life, stop: stop, slots: make(chan struct{}, workers), depth: depth,
		flights: map[string]*flight{}, idemSeed: maphash.MakeSeed()}
}

// begin registers runID, run by component c for userID, and returns its
// context: parent's values and cancellation, also cancelled through the run
// registry and by the end of the server's life. The component's own
// registration of the run joins this one. It fails with errRunInFlight for a
// run already executing in this process, errDraining during shutdown, and
// errQueueFull when too many background runs wait.
func (rn *runner) begin(parent context.Context, runID string, c run.Component, userID string, background bool) (context.Context, *flight, error) {
	return rn.beginShown(parent, runID, c, userID, background, nil)
}

// beginShown is begin for a run that readers of its session may see while
// the session is not stored yet: shown is its RUNNING snapshot.
func (rn *runner) beginShown(parent context.Context, runID string, c run.Component, userID string, background bool, shown *run.Output) (context.Context, *flight, error) {
	ctx, cancel := context.WithCancelCause(parent)
	rn.mu.Lock()
	defer rn.mu.Unlock()
	switch {
	case rn.draining:
		cancel(nil)
		return nil, nil, errDraining
	case background && rn.queued >= cap(rn.slots)+rn.depth:
		cancel(nil)
		return nil, nil, errQueueFull
	}
	rctx, unregister, err := rn.reg.Begin(ctx, run.Registration{RunID: runID, Component: c, UserID: userID}, cancel)
	if err != nil {
		cancel(nil)
		return nil, nil, err
	}
	f := &flight{userID: userID, background: background, shown: shown, cancel: cancel, unregister: unregister}
	f.unlink = context.AfterFunc(rn.life, func() { cancel(context.Cause(rn.life)) })
	rn.flights[runID] = f
	if background {
		rn.queued++
	}
	return rctx, f, nil
}

// beginAfterFlight is begin for a run that an execution in this process
// may be letting go of: a background run's worker ends its registration
// just after the run's final save, so a continue begun right after the run
// paused found it "already executing". An execution of the run in flight
// is waited for (up to wait, or parent's end) and begin is tried again,
// once; errRunInFlight when it still runs.
func (rn *runner) beginAfterFlight(parent context.Context, runID string, c run.Component, userID string, wait time.Duration) (context.Context, *flight, error) {
	ctx, f, err := rn.begin(parent, runID, c, userID, false)
	if !errors.Is(err, errRunInFlight) {
		return ctx, f, err
	}
	if e, ok := rn.reg.Lookup(runID); ok {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-e.Done():
		case <-t.C:
			return nil, nil, err
		case <-parent.Done():
			return nil, nil, err
		}
	}
	return rn.begin(parent, runID, c, userID, false)
}

// errQueueFull: too many background runs are waiting.
var errQueueFull = errors.New("agentos: too many background runs are queued; retry later")

// end unregisters a finished run.
func (rn *runner) end(runID string, f *flight) {
	f.unlink()
	f.unregister()
	f.cancel(nil)
	rn.mu.Lock()
	if rn.flights[runID] == f {
		delete(rn.flights, runID)
	}
	if f.background {
		rn.queued--
	}
	if rn.changed != nil {
		close(rn.changed)
		rn.changed = nil
	}
	rn.mu.Unlock()
}

// inSession returns the snapshots of the runs executing in a session, oldest
// first, that keep(snapshot, owner) accepts.
func (rn *runner) inSession(sessionID string, keep func(shown *run.Output, userID string) bool) []*run.Output {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	var out []*run.Output
	for _, f := range rn.flights {
		if f.shown != nil && f.shown.SessionID == sessionID && keep(f.shown, f.userID) {
			out = append(out, f.shown)
		}
	}
	slices.SortFunc(out, func(a, b *run.Output) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.RunID, b.RunID))
	})
	return out
}

// drain stops new runs from starting.
func (rn *runner) drain() {
	rn.mu.Lock()
	rn.draining = true
	rn.mu.Unlock()
}

// wait blocks until no run is in flight or ctx ends; it reports whether the
// runner is idle.
func (rn *runner) wait(ctx context.Context) bool {
	for {
		rn.mu.Lock()
		if len(rn.flights) == 0 {
			rn.mu.Unlock()
			return true
		}
		if rn.changed == nil {
			rn.changed = make(chan struct{})
		}
		ch := rn.changed
		rn.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// idemLock returns the lock serialising submissions with this idempotency run id.
func (rn *runner) idemLock(runID string) *sync.Mutex {
	return &rn.idem[maphash.String(rn.idemSeed, runID)%uint64(len(rn.idem))]
}

// backgroundQueued is how many background runs were accepted and have not
// ended (waiting for a worker or running).
func (rn *runner) backgroundQueued() int {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.queued
}
