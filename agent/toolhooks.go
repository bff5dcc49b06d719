package agent

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
)

// ToolHandler executes one tool call and returns its result; a failure is a
// result whose Err is set (its Content is what the model reads).
type ToolHandler func(ctx context.Context, call model.ToolCall) tool.Result

// ToolHook wraps every tool call the agent executes (Agno's tool_hooks), the
// way slog handlers wrap each other: it receives the next handler and returns
// one that may log, check, cache or rewrite around calling it — or answer
// without calling it (an authorisation hook returns a Result with Err set).
// Config.ToolHooks[0] is the outermost; FromContext gives the run's ids.
type ToolHook func(next ToolHandler) ToolHandler

// LogToolCalls is a ToolHook that logs each call's name, duration and outcome
// at Info (failures at Warn) to l, or slog.Default when l is nil. Arguments and
// results are logged at Debug only: they may hold user data.
func LogToolCalls(l *slog.Logger) ToolHook {
	return func(next ToolHandler) ToolHandler {
		return func(ctx context.Context, call model.ToolCall) tool.Result {
			log := l
			if log == nil {
				log = slog.Default()
			}
			start := time.Now()
			r := next(ctx, call)
			attrs := []any{"tool", call.Name, "tool_call_id", call.ID, "duration", time.Since(start)}
			if rc, ok := FromContext(ctx); ok {
				attrs = append(attrs, "run_id", rc.RunID)
			}
			if r.Err != nil {
				log.WarnContext(ctx, "agent: tool call failed", append(attrs, "error", r.Err)...)
			} else {
				log.InfoContext(ctx, "agent: tool call", attrs...)
			}
			log.DebugContext(ctx, "agent: tool call detail", "tool", call.Name, "arguments", call.Arguments, "result", r.Content)
			return r
		}
	}
}

// passConsumerPanic panics again with a stream consumer's panic that err,
// a tool call's failure, stands for: the tool set recovered it (a
// *tool.PanicError holding it), or reports the call interrupted because the
// panic cancelled the run while the call was on the run's goroutine.
func passConsumerPanic(ctx context.Context, err error) {
	var pe *tool.PanicError
	if errors.As(err, &pe) && IsConsumerPanic(pe.Value) {
		panic(pe.Value)
	}
	if em, ok := ctx.Value(emitterKey{}).(*emitter); ok && em.ch == nil {
		// A call on its own goroutine (em.ch set) never runs the
		// consumer: its run's consumer panicked elsewhere.
		if sp := em.st.consumerPanicked(); sp != nil {
			panic(sp)
		}
	}
}

// toolHandler builds the chain a run's tool calls go through: the tool set,
// the result cache when CacheResults is set, then ToolHooks (outermost
// first). It is its own function so other layers around tool execution
// (offloading, journaling) compose with it instead of editing it.
func (a *Agent) toolHandler(set *tool.Set) ToolHandler {
	h := ToolHandler(func(ctx context.Context, call model.ToolCall) tool.Result {
		// A stream consumer's panic the tool set recovered (the tool
		// forwarded an event with Emit) is not the tool's failure: it goes
		// on to the consumer, through the hooks and the cache.
		r := set.Execute(ctx, call)
		if r.Err != nil {
			passConsumerPanic(ctx, r.Err)
		}
		return r
	})
	if a.conf().CacheResults {
		h = newToolCache(a.conf().CacheTTL, DefaultToolCacheEntries).wrap(h)
	}
	for i := len(a.conf().ToolHooks) - 1; i >= 0; i-- {
		h = a.conf().ToolHooks[i](h)
	}
	return h
}
