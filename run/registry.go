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
	// Cancel asks the run to stop: the context Begin returned is cancelled
	// with cause (a run reports it as its RunCancelled reason).
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
	// Begin registers a run and returns its context (ctx's values and
	// cancellation, also cancelled through Execution.Cancel) and the
	// function that ends the registration, to call once the run returned.
	// Beginning a run id that is registered fails with ErrAlreadyRunning,
	// unless ctx is that registration's context: the run then joins it (the
	// caller that registered it, e.g. a server, executes it here), and ctx
	// and a no-op end are returned.
	Begin(ctx context.Context, r Registration) (context.Context, func(), error)
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
	cancel context.CancelCauseFunc
	done   chan struct{}
}

func (e *execution) Registration() Registration { return e.reg }
func (e *execution) Cancel(cause error)         { e.cancel(cause) }
func (e *execution) Done() <-chan struct{}      { return e.done }

// executionKey marks a registration's context.
type executionKey struct{}

func (r *localRegistry) Begin(ctx context.Context, reg Registration) (context.Context, func(), error) {
	if reg.RunID == "" {
		return nil, nil, errors.New("run: Registry.Begin needs a run id")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur := r.runs[reg.RunID]; cur != nil {
		if own, ok := ctx.Value(executionKey{}).(*execution); ok && own == cur {
			return ctx, func() {}, nil
		}
		return nil, nil, fmt.Errorf("%w: %s", ErrAlreadyRunning, reg.RunID)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	e := &execution{reg: reg, cancel: cancel, done: make(chan struct{})}
	r.runs[reg.RunID] = e
	var once sync.Once
	end := func() {
		once.Do(func() {
			r.mu.Lock()
			if r.runs[reg.RunID] == e {
				delete(r.runs, reg.RunID)
			}
			r.mu.Unlock()
			cancel(context.Canceled)
			close(e.done)
		})
	}
	return context.WithValue(ctx, executionKey{}, e), end, nil
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
