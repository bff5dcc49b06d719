package agent

import (
	"context"
	"sync"

	"github.com/agentryhq/agentry/run"
)

// A tool may call other tools on the model's behalf (codemode's execute runs
// code that calls them). Those calls belong in the run like the model's own:
// the tool reports each one with RecordToolCall, and the agent adds it to the
// run's tools and events when the calling tool returns. This is the agent's
// whole seam for nested calls: one context value per tool call.

type nestedKey struct{}

// nestedCalls collects the calls one tool call reports; tool goroutines
// append concurrently, the run's goroutine takes them once the tool returned.
type nestedCalls struct {
	mu    sync.Mutex
	execs []run.ToolExecution
	// paused and pause are set by PauseToolCall.
	paused bool
	pause  []run.Requirement
	// child is set by SetChildRunID.
	child string
}

// RecordToolCall records exec, a tool call made inside the tool call ctx
// belongs to, in that call's run. It reports false when ctx is not the
// context of an agent's tool call (nothing is recorded). The recorded call is
// stored in the run's tools just before the call that made it, and its
// ToolCallStarted and ToolCallCompleted (or ToolCallError) events are emitted
// when that call returns. Calls recorded after it returned are dropped. Safe
// for concurrent use.
func RecordToolCall(ctx context.Context, exec run.ToolExecution) bool {
	n, ok := ctx.Value(nestedKey{}).(*nestedCalls)
	if !ok {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.execs == nil {
		n.execs = make([]run.ToolExecution, 0, 4)
	}
	n.execs = append(n.execs, exec)
	return true
}

// SetChildRunID records runID as the run the tool call ctx belongs to
// started (a team's delegation names its member run so): the call's
// ToolExecution carries it as child_run_id, in the stored run and in its
// ToolCallCompleted event. It reports false when ctx is not the context of
// an agent's tool call. The last one set wins.
func SetChildRunID(ctx context.Context, runID string) bool {
	n, ok := ctx.Value(nestedKey{}).(*nestedCalls)
	if !ok {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.child = runID
	return true
}

// take returns the recorded calls, pause and child run, and stops recording.
func (n *nestedCalls) take() callExtras {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := callExtras{nested: n.execs, paused: n.paused, pause: n.pause, child: n.child}
	n.execs = []run.ToolExecution{} // non-nil: later calls append to a list nobody reads
	return out
}

// callExtras is what a tool call reported besides its result.
type callExtras struct {
	nested []run.ToolExecution
	paused bool
	pause  []run.Requirement
	child  string
}
