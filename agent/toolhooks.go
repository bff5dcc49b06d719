package agent

import (
	"context"
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

// toolHandler builds the chain a run's tool calls go through: the tool set,
// the result cache when CacheResults is set, then ToolHooks (outermost
// first). It is its own function so other layers around tool execution
// (offloading, journaling) compose with it instead of editing it.
func (a *Agent) toolHandler(set *tool.Set) ToolHandler {
	h := ToolHandler(set.Execute)
	if a.conf().CacheResults {
		h = newToolCache(a.conf().CacheTTL, DefaultToolCacheEntries).wrap(h)
	}
	for i := len(a.conf().ToolHooks) - 1; i >= 0; i-- {
		h = a.conf().ToolHooks[i](h)
	}
	return h
}
