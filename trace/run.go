package trace

import (
	"context"
	"iter"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
)

// FinalStatus maps a run's terminal event, under any component's name for
// it (RunCompleted, TeamRunCompleted, WorkflowCompleted, …), to the run's
// status; ok is false for other events.
func FinalStatus(ev run.Event) (run.Status, bool) {
	switch ev.Event {
	case run.EventRunCompleted, run.TeamEvent(run.EventRunCompleted), run.EventWorkflowCompleted:
		return run.StatusCompleted, true
	case run.EventRunError, run.TeamEvent(run.EventRunError), run.EventWorkflowError:
		return run.StatusError, true
	case run.EventRunCancelled, run.TeamEvent(run.EventRunCancelled), run.EventWorkflowCancelled:
		return run.StatusCancelled, true
	case run.EventRunPaused, run.TeamEvent(run.EventRunPaused), run.EventWorkflowPaused:
		return run.StatusPaused, true
	}
	return "", false
}

// RunInfo is what a caller knows of a run before it starts (the server
// picks the run id, session and user): it is on the run span from its start,
// so a streamed run's span carries its owner even when it ends early.
type RunInfo struct {
	RunID, SessionID, UserID string
}

func (i RunInfo) attrs() []attribute.KeyValue {
	var kv []attribute.KeyValue
	if i.RunID != "" {
		kv = append(kv, AttrRunID.String(i.RunID))
	}
	if i.SessionID != "" {
		kv = append(kv, AttrConversationID.String(i.SessionID))
	}
	if i.UserID != "" {
		kv = append(kv, AttrUserID.String(i.UserID))
	}
	return kv
}

// KnownRunner is Runner for a run whose ids are known before it starts:
// each Run and Stream is an invoke_agent span carrying info from its start.
// With a nil tp it returns r.
func KnownRunner(r agent.Runner, tp oteltrace.TracerProvider, info RunInfo) agent.Runner {
	if tp == nil {
		return r
	}
	return tracedRunner{Runner: r, tr: tp.Tracer(ScopeName), info: info, content: contentOf(tp)}
}

func (t tracedRunner) start(ctx context.Context, input *run.Input) (context.Context, oteltrace.Span) {
	ctx, span := startRun(ctx, t.tr, t.Runner.Component())
	if kv := t.info.attrs(); len(kv) > 0 {
		span.SetAttributes(kv...)
	}
	if !t.content.Omit && input.InputContent != nil {
		mime := mimeText
		if _, ok := input.InputContent.(string); !ok {
			mime = mimeJSON
		}
		t.content.setInput(span, run.ContentText(input.InputContent), mime)
	}
	return ctx, span
}

func (t tracedRunner) Run(ctx context.Context, input run.Input, opts ...agent.RunOption) (*run.Output, error) {
	ctx, span := t.start(ctx, &input)
	out, err := t.Runner.Run(ctx, input, opts...)
	endRun(span, out, err, t.content)
	return out, err
}

func (t tracedRunner) Stream(ctx context.Context, input run.Input, opts ...agent.RunOption) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		ctx, span := t.start(ctx, &input)
		out := run.Output{RunID: t.info.RunID, SessionID: t.info.SessionID, UserID: t.info.UserID}
		var failed error
		defer func() { endRun(span, &out, failed, t.content) }()
		for ev, err := range t.Runner.Stream(ctx, input, opts...) {
			if err != nil {
				failed = err
			} else {
				if ev.RunID != "" && out.RunID == "" {
					out.RunID = ev.RunID
				}
				if ev.SessionID != "" && out.SessionID == "" {
					out.SessionID = ev.SessionID
				}
				if s, ok := FinalStatus(ev); ok {
					out.Status = s
					if ev.RunID == "" || ev.RunID == out.RunID || out.RunID == "" {
						out.Content = ev.Content
					}
				}
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}
