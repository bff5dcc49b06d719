package trace

import (
	"context"
	"iter"

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

// OwnEnd finds a streamed run's own end among its events: the run is the
// first event's (a team's stream carries its members' runs' events, a
// workflow's its steps' runs'), and Observe reports the status of a
// terminal event of that run. The zero value is ready; RunID may be set
// when the run's id is known before it starts.
type OwnEnd struct{ RunID string }

// Observe takes the stream's next event.
func (o *OwnEnd) Observe(ev run.Event) (run.Status, bool) {
	if o.RunID == "" {
		o.RunID = ev.RunID
	}
	if ev.RunID != "" && ev.RunID != o.RunID {
		return "", false
	}
	return FinalStatus(ev)
}

// RunInfo is what a caller knows of a run before it starts (the server
// picks the run id, session and user): the run span carries it however the
// run ends (a streamed run ended early, a run that failed before it had an
// id), where the run's own output does not say otherwise.
type RunInfo struct {
	RunID, SessionID, UserID string
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

// start opens the run span and returns what its end sets: the run's input
// text (and MIME type) when the span records content, the component and
// the ids known now.
func (t tracedRunner) start(ctx context.Context, input *run.Input) (context.Context, oteltrace.Span, runEnd) {
	c := t.Runner.Component()
	ctx, span := startRun(ctx, t.tr, c)
	e := runEnd{content: t.content, comp: c, info: t.info}
	if t.content.Omit || input.InputContent == nil || !span.IsRecording() {
		return ctx, span, e
	}
	e.inputMime = mimeText
	if _, ok := input.InputContent.(string); !ok {
		e.inputMime = mimeJSON
	}
	e.input = run.ContentText(input.InputContent)
	return ctx, span, e
}

func (t tracedRunner) Run(ctx context.Context, input run.Input, opts ...agent.RunOption) (*run.Output, error) {
	ctx, span, e := t.start(ctx, &input)
	out, err := t.Runner.Run(ctx, input, opts...)
	e.end(span, out, err)
	return out, err
}

// runStream is a streamed run's state, in one value (see chatStream).
type runStream struct {
	out    run.Output
	end    OwnEnd
	failed error
}

func (st *runStream) observe(ev run.Event) {
	s, ok := st.end.Observe(ev)
	st.out.RunID = st.end.RunID
	if ev.SessionID != "" && st.out.SessionID == "" {
		st.out.SessionID = ev.SessionID
	}
	if ok {
		st.out.Status, st.out.Content = s, ev.Content
	}
}

func (t tracedRunner) Stream(ctx context.Context, input run.Input, opts ...agent.RunOption) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		ctx, span, e := t.start(ctx, &input)
		st := &runStream{out: run.Output{RunID: t.info.RunID, SessionID: t.info.SessionID, UserID: t.info.UserID}, end: OwnEnd{RunID: t.info.RunID}}
		defer func() { e.end(span, &st.out, st.failed) }()
		for ev, err := range t.Runner.Stream(ctx, input, opts...) {
			if err != nil {
				st.failed = err
			} else {
				st.observe(ev)
			}
			if !yield(ev, err) {
				if st.out.Status == "" && st.failed == nil {
					// Its consumer stopped reading before the run ended
					// (a client gone): the run stops, stored CANCELLED.
					st.out.Status = run.StatusCancelled
				}
				return
			}
		}
	}
}
