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
	for _, m := range []*model.Model{&cfg.Model, &cfg.ReasoningModel, &cfg.ParserModel, &cfg.OutputModel} {
		if *m != nil {
			*m = tracedModel{next: *m, tr: tr, content: content}
		}
	}
	for i, m := range cfg.FallbackModels {
		cfg.FallbackModels[i] = tracedModel{next: m, tr: tr, content: content}
	}
	cfg.ToolHooks = append([]agent.ToolHook{ToolHook(tp)}, cfg.ToolHooks...)
}

// Model wraps m in chat spans; with a nil tp it returns m.
func Model(m model.Model, tp oteltrace.TracerProvider) model.Model {
	if tp == nil || m == nil {
		return m
	}
	return tracedModel{next: m, tr: tp.Tracer(ScopeName), content: contentOf(tp)}
}

type tracedModel struct {
	next    model.Model
	tr      oteltrace.Tracer
	content Content
}

func (m tracedModel) Info() model.Info { return m.next.Info() }

func (m tracedModel) start(ctx context.Context, req *model.Request) (context.Context, oteltrace.Span) {
	info := m.next.Info()
	ctx, span := m.tr.Start(ctx, "chat "+info.ID, oteltrace.WithSpanKind(oteltrace.SpanKindClient), oteltrace.WithAttributes(
		AttrOperation.String("chat"), AttrProvider.String(info.Provider), AttrSystem.String(info.Provider), AttrRequestModel.String(info.ID)))
	if !m.content.Omit && req != nil && len(req.Messages) > 0 {
		m.content.setInput(span, m.content.messagesJSON(req.Messages), mimeJSON)
	}
	return ctx, span
}

func endModel(span oteltrace.Span, usage *model.Usage, stop, modelID string, err error) {
	if usage != nil {
		span.SetAttributes(AttrInputTokens.Int(usage.InputTokens), AttrOutputTokens.Int(usage.OutputTokens))
	}
	if stop != "" {
		span.SetAttributes(AttrFinishReasons.StringSlice([]string{stop}))
	}
	if modelID != "" {
		span.SetAttributes(AttrResponseModel.String(modelID))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (m tracedModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	ctx, span := m.start(ctx, req)
	resp, err := m.next.Invoke(ctx, req)
	if resp != nil {
		if !m.content.Omit && err == nil {
			text, mime := responseText(resp.Message.Content, resp.Message.ToolCalls)
			m.content.setOutput(span, text, mime)
		}
		endModel(span, &resp.Usage, resp.StopReason, resp.ModelID, err)
	} else {
		endModel(span, nil, "", "", err)
	}
	return resp, err
}

func (m tracedModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		ctx, span := m.start(ctx, req)
		var usage *model.Usage
		var stop, modelID string
		var failed error
		var text *textCollector
		if !m.content.Omit {
			text = &textCollector{limit: m.content.limit()}
		}
		defer func() {
			if text != nil && failed == nil {
				answer, mime := text.answer()
				m.content.setOutput(span, answer, mime)
			}
			endModel(span, usage, stop, modelID, failed)
		}()
		for c, err := range m.next.Stream(ctx, req) {
			if err != nil {
				failed = err
			} else if c != nil {
				if text != nil {
					if c.Content != "" {
						text.add(c.Content)
					}
					for _, d := range c.ToolCalls {
						text.addCall(d)
					}
				}
				if c.Usage != nil {
					u := *c.Usage
					usage = &u
				}
				if c.StopReason != "" {
					stop = c.StopReason
				}
				if c.ModelID != "" {
					modelID = c.ModelID
				}
			}
			if !yield(c, err) {
				return
			}
		}
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
			ctx, span := tr.Start(ctx, "execute_tool "+call.Name, oteltrace.WithSpanKind(oteltrace.SpanKindInternal),
				oteltrace.WithAttributes(AttrOperation.String("execute_tool"), AttrToolName.String(call.Name), AttrToolCallID.String(call.ID)))
			defer span.End()
			content.setInput(span, call.Arguments, mimeJSON)
			res := next(ctx, call)
			if res.Err != nil {
				span.RecordError(res.Err)
				span.SetStatus(codes.Error, res.Err.Error())
			} else {
				content.setOutput(span, res.Content, mimeText)
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
	return startRun(ctx, tp.Tracer(ScopeName), c)
}

func startRun(ctx context.Context, tr oteltrace.Tracer, c run.Component) (context.Context, oteltrace.Span) {
	name := c.Name
	if name == "" {
		name = c.ID
	}
	return tr.Start(ctx, "invoke_agent "+name, oteltrace.WithSpanKind(oteltrace.SpanKindInternal), oteltrace.WithAttributes(
		AttrOperation.String("invoke_agent"), AttrAgentID.String(c.ID), AttrAgentName.String(c.Name), AttrComponentType.String(string(c.Type))))
}

// EndRun records a run's outcome on its span and ends it (with the
// default Content policy: the answer is recorded, capped).
func EndRun(span oteltrace.Span, out *run.Output, err error) { endRun(span, out, err, Content{}) }

func endRun(span oteltrace.Span, out *run.Output, err error, content Content) {
	if out != nil {
		if err == nil && out.Status != run.StatusError && !content.Omit {
			if text := out.ContentString(); text != "" {
				mime := mimeText
				if _, ok := out.Content.(string); !ok {
					mime = mimeJSON
				}
				content.setOutput(span, text, mime)
			}
		}
		span.SetAttributes(AttrRunID.String(out.RunID), AttrConversationID.String(out.SessionID), AttrRunStatus.String(string(out.Status)))
		if out.UserID != "" {
			span.SetAttributes(AttrUserID.String(out.UserID))
		}
		if out.Model != "" {
			span.SetAttributes(AttrRequestModel.String(out.Model), AttrProvider.String(out.ModelProvider))
		}
		if out.Metrics != nil {
			span.SetAttributes(AttrInputTokens.Int(out.Metrics.InputTokens), AttrOutputTokens.Int(out.Metrics.OutputTokens))
		}
		if out.Status == run.StatusError && err == nil {
			span.SetStatus(codes.Error, out.ContentString())
		}
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
