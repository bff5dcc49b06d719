package trace

import (
	"context"
	"iter"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/internal/otelspan"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// ScopeName is the instrumentation scope of Agentry's spans.
const ScopeName = otelspan.ScopeName

// GenAI semantic-convention attribute keys (OpenTelemetry gen_ai.*).
const (
	AttrOperation      = attribute.Key("gen_ai.operation.name")
	AttrProvider       = attribute.Key("gen_ai.provider.name")
	AttrSystem         = attribute.Key("gen_ai.system")
	AttrRequestModel   = attribute.Key("gen_ai.request.model")
	AttrResponseModel  = attribute.Key("gen_ai.response.model")
	AttrInputTokens    = attribute.Key("gen_ai.usage.input_tokens")
	AttrOutputTokens   = attribute.Key("gen_ai.usage.output_tokens")
	AttrFinishReasons  = attribute.Key("gen_ai.response.finish_reasons")
	AttrToolName       = attribute.Key("gen_ai.tool.name")
	AttrToolCallID     = attribute.Key("gen_ai.tool.call.id")
	AttrAgentID        = attribute.Key("gen_ai.agent.id")
	AttrAgentName      = attribute.Key("gen_ai.agent.name")
	AttrConversationID = attribute.Key("gen_ai.conversation.id")
	AttrRunID          = attribute.Key("agentry.run.id")
	AttrRunStatus      = attribute.Key("agentry.run.status")
	AttrComponentType  = attribute.Key("agentry.component.type")
	AttrUserID         = attribute.Key("agentry.user.id")
)

// Instrument adds tracing to an agent's configuration before agent.New:
// its models (main, reasoning, parser, output, fallbacks) are wrapped in
// chat spans and a tool hook (outermost) opens an execute_tool span per
// call. With a nil tp it changes nothing.
func Instrument(cfg *agent.Config, tp oteltrace.TracerProvider) {
	if tp == nil {
		return
	}
	tr, content := tp.Tracer(ScopeName), contentOf(tp)
	cfg.WrapModels(func(m model.Model) model.Model { return newTracedModel(m, tr, content) })
	cfg.ToolHooks = append([]agent.ToolHook{ToolHook(tp)}, cfg.ToolHooks...)
}

// Model wraps m in chat spans; with a nil tp it returns m.
func Model(m model.Model, tp oteltrace.TracerProvider) model.Model {
	if tp == nil || m == nil {
		return m
	}
	return newTracedModel(m, tp.Tracer(ScopeName), contentOf(tp))
}

type tracedModel struct {
	next    model.Model
	tr      oteltrace.Tracer
	content Content
	spec    *chatSpec
}

func newTracedModel(m model.Model, tr oteltrace.Tracer, content Content) tracedModel {
	return tracedModel{next: m, tr: tr, content: content, spec: newChatSpec(m.Info())}
}

// chatSpec is what a model's chat spans start with (name, kind and the
// model's attributes), built once per model rather than once per call.
type chatSpec struct {
	id, provider, name string
	opts               []oteltrace.SpanStartOption
}

func newChatSpec(info model.Info) *chatSpec {
	return &chatSpec{id: info.ID, provider: info.Provider, name: "chat " + info.ID, opts: []oteltrace.SpanStartOption{
		kindClient, oteltrace.WithAttributes(AttrOperation.String("chat"), AttrProvider.String(info.Provider),
			AttrSystem.String(info.Provider), AttrRequestModel.String(info.ID))}}
}

func (m tracedModel) Info() model.Info { return m.next.Info() }

// start opens the chat span; input is the request's messages as JSON when
// the span records content (nothing is encoded for a span not sampled).
func (m tracedModel) start(ctx context.Context, req *model.Request) (context.Context, oteltrace.Span, string) {
	spec := m.spec
	if info := m.next.Info(); spec == nil || info.ID != spec.id || info.Provider != spec.provider {
		spec = newChatSpec(info) // a model whose identity changes after wrapping
	}
	ctx, span := m.tr.Start(ctx, spec.name, spec.opts...)
	var input string
	if !m.content.Omit && req != nil && req.Len() > 0 && span.IsRecording() {
		input = m.content.messagesJSON(req.All())
	}
	return ctx, span, input
}

// chatEnd is what a chat span learns by its end.
type chatEnd struct {
	input, output, outputMime string
	usage                     *model.Usage
	stop, modelID             string
	err                       error
}

// end sets the span's content and outcome in one call and ends it.
func (e *chatEnd) end(span oteltrace.Span, content Content) {
	b := getAttrs()
	content.add(b, AttrInputValue, AttrInputMimeType, e.input, mimeJSON)
	if e.err == nil {
		content.add(b, AttrOutputValue, AttrOutputMimeType, e.output, e.outputMime)
	}
	if e.usage != nil {
		b.add(AttrInputTokens.Int(e.usage.InputTokens))
		b.add(AttrOutputTokens.Int(e.usage.OutputTokens))
	}
	if e.stop != "" {
		b.add(finishReason(e.stop))
	}
	if e.modelID != "" {
		b.add(AttrResponseModel.String(e.modelID))
	}
	b.set(span)
	b.release()
	if e.err != nil {
		span.RecordError(e.err)
		span.SetStatus(codes.Error, e.err.Error())
	}
	span.End()
}

func (m tracedModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	ctx, span, input := m.start(ctx, req)
	resp, err := m.next.Invoke(ctx, req)
	e := chatEnd{input: input, err: err}
	if resp != nil {
		if !m.content.Omit && err == nil && span.IsRecording() {
			e.output, e.outputMime = responseText(resp.Message.Content, resp.Message.ToolCalls)
		}
		e.usage, e.stop, e.modelID = &resp.Usage, resp.StopReason, resp.ModelID
	}
	e.end(span, m.content)
	return resp, err
}

// chatStream is a streamed chat call's state, in one value: the loop body
// of a range over a function is a closure, and each variable it captures
// would otherwise be its own allocation.
type chatStream struct {
	chatEnd
	usage   model.Usage
	collect bool
	text    textCollector
}

func (m tracedModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		ctx, span, input := m.start(ctx, req)
		st := &chatStream{chatEnd: chatEnd{input: input}}
		st.collect = !m.content.Omit && span.IsRecording()
		st.text.limit = m.content.limit()
		defer func() {
			if st.collect && st.err == nil {
				st.output, st.outputMime = st.text.answer()
			}
			st.chatEnd.end(span, m.content)
		}()
		for c, err := range m.next.Stream(ctx, req) {
			if err != nil {
				st.err = err
			} else if c != nil {
				st.observe(c)
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

func (st *chatStream) observe(c *model.Chunk) {
	if st.collect {
		if c.Content != "" {
			st.text.add(c.Content)
		}
		for _, d := range c.ToolCalls {
			st.text.addCall(d)
		}
	}
	if c.Usage != nil {
		st.usage = *c.Usage
		st.chatEnd.usage = &st.usage
	}
	if c.StopReason != "" {
		st.stop = c.StopReason
	}
	if c.ModelID != "" {
		st.modelID = c.ModelID
	}
}

// ToolHook opens an execute_tool span around each tool call; with a nil tp
// it returns a hook that adds nothing.
func ToolHook(tp oteltrace.TracerProvider) agent.ToolHook {
	if tp == nil {
		return func(next agent.ToolHandler) agent.ToolHandler { return next }
	}
	tr, content := tp.Tracer(ScopeName), contentOf(tp)
	return func(next agent.ToolHandler) agent.ToolHandler {
		return func(ctx context.Context, call model.ToolCall) tool.Result {
			b := getAttrs()
			b.add(AttrOperation.String("execute_tool"))
			b.add(AttrToolName.String(call.Name))
			b.add(AttrToolCallID.String(call.ID))
			ctx, span := tr.Start(ctx, "execute_tool "+call.Name, b.startOptions(kindInternal)...)
			b.release()
			defer span.End()
			res := next(ctx, call)
			if span.IsRecording() {
				b = getAttrs()
				content.add(b, AttrInputValue, AttrInputMimeType, call.Arguments, mimeJSON)
				if res.Err == nil {
					content.add(b, AttrOutputValue, AttrOutputMimeType, res.Content, mimeText)
				}
				b.set(span)
				b.release()
			}
			if res.Err != nil {
				span.RecordError(res.Err)
				span.SetStatus(codes.Error, res.Err.Error())
			}
			return res
		}
	}
}

// Runner wraps a component so each Run and Stream is an invoke_agent span
// (the parent of its model and tool spans); with a nil tp it returns r.
func Runner(r agent.Runner, tp oteltrace.TracerProvider) agent.Runner {
	if tp == nil {
		return r
	}
	return tracedRunner{Runner: r, tr: tp.Tracer(ScopeName), content: contentOf(tp)}
}

type tracedRunner struct {
	agent.Runner
	tr      oteltrace.Tracer
	info    RunInfo
	content Content
}

// StartRun opens a run's span; the server uses it around runs it executes.
func StartRun(ctx context.Context, tp oteltrace.TracerProvider, c run.Component) (context.Context, oteltrace.Span) {
	ctx, span := startRun(ctx, tp.Tracer(ScopeName), c)
	b := getAttrs()
	runEnd{comp: c}.addIDs(b, nil)
	b.set(span)
	b.release()
	return ctx, span
}

// runStartOptions start every run span: the operation is the attribute a
// sampler may read at creation; the component's and the run's ids come
// with the outcome, in the span's one other SetAttributes call.
var runStartOptions = []oteltrace.SpanStartOption{kindInternal, oteltrace.WithAttributes(AttrOperation.String("invoke_agent"))}

func startRun(ctx context.Context, tr oteltrace.Tracer, c run.Component) (context.Context, oteltrace.Span) {
	name := c.Name
	if name == "" {
		name = c.ID
	}
	return tr.Start(ctx, "invoke_agent "+name, runStartOptions...)
}

// EndRun records a run's outcome on its span and ends it (with the
// default Content policy: the answer is recorded, capped).
func EndRun(span oteltrace.Span, out *run.Output, err error) {
	runEnd{noComp: true}.end(span, out, err)
}

// runEnd is what a run span carries besides its outcome: the content
// policy, the run's input text, its component and the ids known before
// it started.
type runEnd struct {
	content          Content
	input, inputMime string
	comp             run.Component
	noComp           bool // EndRun: StartRun set the component
	info             RunInfo
}

// addIDs gathers the component's attributes and the run's ids, the
// output's where it has them, else those known at the start.
func (e runEnd) addIDs(b *attrBuf, out *run.Output) {
	if !e.noComp {
		b.add(AttrAgentID.String(e.comp.ID))
		b.add(AttrAgentName.String(e.comp.Name))
		b.add(AttrComponentType.String(string(e.comp.Type)))
	}
	runID, sessionID, userID := e.info.RunID, e.info.SessionID, e.info.UserID
	if out != nil {
		runID, sessionID, userID = or(out.RunID, runID), or(out.SessionID, sessionID), or(out.UserID, userID)
	}
	if runID != "" {
		b.add(AttrRunID.String(runID))
	}
	if sessionID != "" {
		b.add(AttrConversationID.String(sessionID))
	}
	if userID != "" {
		b.add(AttrUserID.String(userID))
	}
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// end sets the run's content (its input text and answer), ids and outcome
// in one call and ends the span.
func (e runEnd) end(span oteltrace.Span, out *run.Output, err error) {
	b := getAttrs()
	e.content.add(b, AttrInputValue, AttrInputMimeType, e.input, e.inputMime)
	e.addIDs(b, out)
	if out != nil {
		if err == nil && out.Status != run.StatusError && !e.content.Omit && span.IsRecording() {
			if text := out.ContentString(); text != "" {
				mime := mimeText
				if _, ok := out.Content.(string); !ok {
					mime = mimeJSON
				}
				e.content.add(b, AttrOutputValue, AttrOutputMimeType, text, mime)
			}
		}
		b.add(AttrRunStatus.String(string(out.Status)))
		if out.Model != "" {
			b.add(AttrRequestModel.String(out.Model))
			b.add(AttrProvider.String(out.ModelProvider))
		}
		if out.Metrics != nil {
			b.add(AttrInputTokens.Int(out.Metrics.InputTokens))
			b.add(AttrOutputTokens.Int(out.Metrics.OutputTokens))
		}
	}
	b.set(span)
	b.release()
	if out != nil && out.Status == run.StatusError && err == nil {
		span.SetStatus(codes.Error, out.ContentString())
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// ReadsHistory answers for the wrapped model (model.HistoryReader).
func (m tracedModel) ReadsHistory() bool { return model.ReadsHistory(m.next) }

// AcceptsURL answers for the wrapped model (model.URLAccepter): with
// tracing on, media stored as references still go to a model that takes
// URLs as fresh signed URLs, not as bytes.
func (m tracedModel) AcceptsURL(t model.PartType, mimeType string) bool {
	return model.AcceptsURL(m.next, t, mimeType)
}
