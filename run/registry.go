package run

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrAlreadyRunning is returned by Registry.Begin for a run id that is
// executing in this process already.
var ErrAlreadyRunning = errors.New("run: a run with this id is already executing in this process")

// Registration says which run executes: its id, the component running it and
// its user.
type Registration struct {
	RunID     string
	Component Component
	UserID    string
}

// Execution is a registered run in progress.
type Execution interface {
	Registration() Registration
	// Cancel asks the run to stop: the cancel given to Begin is called with
	// cause (a run reports it as its RunCancelled reason).
	Cancel(cause error)
	// Done is closed when the registration ends, i.e. when the run has
	// returned (and, for components that store runs, is stored).
	Done() <-chan struct{}
}

// Registry is where the runs executing in this process are found to be
// cancelled. Agents, teams and workflows register every run they execute in
// DefaultRegistry; agentos registers the runs it starts there too (before
// they run, so a cancel finds a queued background run), and its cancel route
// consults nothing else.
type Registry interface {
	// Begin registers a run executing under ctx, which cancel cancels (the
	// caller owns the run's context; the registry only finds it), and
	// returns ctx marked as the registration's and the function that ends
	// the registration, to call once the run returned. Beginning a run id
	// that is registered fails with ErrAlreadyRunning, unless ctx descends
	// from that registration's context: the run then joins it (the caller
	// that registered it, e.g. a server, executes it here: cancelling the
	// registration cancels ctx too), and ctx and a no-op end are returned.
	Begin(ctx context.Context, r Registration, cancel context.CancelCauseFunc) (context.Context, func(), error)
	// Lookup returns the run registered as runID.
	Lookup(runID string) (Execution, bool)
}

// CancelRun cancels runID with cause when it is registered in r as c's run
// (same kind and id), and reports whether it was.
func CancelRun(r Registry, c Component, runID string, cause error) bool {
	e, ok := r.Lookup(runID)
	if !ok || e.Registration().Component.Key() != c.Key() {
		return false
	}
	e.Cancel(cause)
	return true
}

var defaultRegistry = NewRegistry()

// DefaultRegistry is the registry of this process.
func DefaultRegistry() Registry { return defaultRegistry }

// NewRegistry returns an empty in-process registry, safe for concurrent use.
func NewRegistry() Registry { return &localRegistry{runs: map[string]*execution{}} }

type localRegistry struct {
	mu   sync.Mutex
	runs map[string]*execution
}

type execution struct {
	reg    Registration
	owner  *localRegistry
	cancel context.CancelCauseFunc
	// done is made by the first Done (most runs are never waited for);
	// ended says end ran. Both are guarded by owner.mu.
	done  chan struct{}
	ended bool
	// ctx is the run's context Begin returns: the execution's own node
	// (no context.WithValue allocation per run).
	ctx execContext
}

// execContext is a registration's context: its parent's values plus
// executionKey.
type execContext struct {
	context.Context
	e *execution
}

func (c *execContext) Value(key any) any {
	if _, ok := key.(executionKey); ok {
		return c.e
	}
	return c.Context.Value(key)
}

func (e *execution) Registration() Registration { return e.reg }
func (e *execution) Cancel(cause error)         { e.cancel(cause) }

func (e *execution) Done() <-chan struct{} {
	e.owner.mu.Lock()
	defer e.owner.mu.Unlock()
	if e.done == nil {
		e.done = make(chan struct{})
		if e.ended {
			close(e.done)
		}
	}
	return e.done
}

// end removes the registration; later calls do nothing. The run's context
// is its owner's to release.
func (e *execution) end() {
	r := e.owner
	r.mu.Lock()
	if e.ended {
		r.mu.Unlock()
		return
	}
	e.ended = true
	if r.runs[e.reg.RunID] == e {
		delete(r.runs, e.reg.RunID)
	}
	if e.done != nil {
		close(e.done)
	}
	r.mu.Unlock()
}

// executionKey marks a registration's context.
type executionKey struct{}

func nop() {}

func (r *localRegistry) Begin(ctx context.Context, reg Registration, cancel context.CancelCauseFunc) (context.Context, func(), error) {
	if reg.RunID == "" || cancel == nil {
		return nil, nil, errors.New("run: Registry.Begin needs a run id and the run's cancel function")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur := r.runs[reg.RunID]; cur != nil {
		if own, ok := ctx.Value(executionKey{}).(*execution); ok && own == cur {
			return ctx, nop, nil
		}
		return nil, nil, fmt.Errorf("%w: %s", ErrAlreadyRunning, reg.RunID)
	}
	e := &execution{reg: reg, owner: r, cancel: cancel}
	e.ctx = execContext{Context: ctx, e: e}
	r.runs[reg.RunID] = e
	return &e.ctx, e.end, nil
}

func (r *localRegistry) Lookup(runID string) (Execution, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.runs[runID]
	if !ok {
		return nil, false
	}
	return e, true
}
