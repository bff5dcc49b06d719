package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// runNew is a fresh run: RunStarted, session and history, optional reasoning,
// then the model/tool loop.
func (st *state) runNew(input run.Input) {
	in := input
	st.out.Input = &in
	history, err := st.loadContext()
	if st.refuseStart(err) {
		return
	}
	if st.sink.on() {
		e := st.ev(run.EventRunStarted)
		e.Model, e.ModelProvider = st.out.Model, st.out.ModelProvider
		st.emit(e)
	}
	if err != nil {
		st.finishCancelled()
		return
	}
	if !st.checkInput(&in) {
		return
	}
	if err = st.rehydrateHistory(history); err != nil {
		st.finishErr(err)
		return
	}
	st.buildMessages(history, &in)
	if !st.claim() {
		return
	}
	st.addKnowledgeToUser(in.Text())
	if st.p.reasoning != nil && !st.reason() {
		return
	}
	st.loop()
}

// loop asks the model and executes its tool calls until it answers without
// tools, or the run pauses, fails or is cancelled.
func (st *state) loop() {
	st.iterationStarted()
	for {
		if st.ctx.Err() != nil {
			st.finishCancelled()
			return
		}
		msg, err := st.callModel()
		if err != nil {
			st.finishErr(err)
			return
		}
		calls := msg.ToolCalls
		if n := len(st.msgs); len(calls) > 0 && cap(st.msgs)-n < 2+len(calls) {
			// Room for this message, its calls' results and an answer (append
			// would round up to twice the list), and at least half again the
			// list when it grows again: a long tool loop copies each message a
			// bounded number of times.
			size := max(n+2+len(calls), cap(st.msgs)+cap(st.msgs)/2)
			st.msgs = append(make([]model.Message, 0, size), st.msgs...)
		}
		st.msgs = append(st.msgs, msg)
		if len(calls) == 0 {
			if st.iterateAgain(msg.Content) {
				if !st.recordModelStep() {
					return
				}
				continue
			}
			if st.ext != nil {
				st.ext.unrecorded = nil // the run's final save records it
			}
			st.complete(msg.Content)
			return
		}
		if !st.recordModelStep() {
			return
		}
		if st.limitHit {
			// The model was told to answer but still asks for tools: answer the
			// calls with the limit error (keeping the conversation well formed)
			// and end the run with what it said.
			pcs := st.pending(calls)
			for i := range pcs {
				pcs[i].skip(st.limitMessage())
			}
			st.executeTools(pcs)
			st.complete(msg.Content)
			return
		}
		if st.tix.hitl && st.pauseIfNeeded(calls) {
			return
		}
		pcs := st.pending(calls)
		if stop, content := st.executeTools(pcs); st.stopped {
			return
		} else if st.ctx.Err() != nil {
			st.finishCancelled()
			return
		} else if st.out.Status == run.StatusPaused {
			return
		} else if stop {
			st.complete(content)
			return
		}
	}
}

func (st *state) limitMessage() string {
	return fmt.Sprintf("tool call limit of %d reached for this run; answer without calling tools", st.a.conf().ToolCallLimit)
}

// callModel streams one model request, emitting content deltas to a live
// consumer, and returns the assembled assistant message. When the model fails
// before yielding anything with an error the fallback config covers, the
// fallback models are tried in order and the run records the one that answered.
func (st *state) callModel() (model.Message, error) {
	req := &st.req
	hist, msgs, err := st.conversation(st.msgs, int(st.histAt), st.withRemoteBytes)
	if err != nil {
		return model.Message{}, err
	}
	req.History, req.Messages = hist, msgs
	req.Tools = st.tix.specs
	req.ToolChoice = st.a.conf().ToolChoice
	if st.limitHit {
		req.ToolChoice = "none"
	}
	if st.schema != nil && st.p.parserModel == nil {
		req.ResponseFormat = st.schema.format
	}
	if st.sink.on() {
		e := st.ev(run.EventModelRequestStarted)
		e.Model, e.ModelProvider = st.out.Model, st.out.ModelProvider
		st.emit(e)
	}
	resp, answered, err := st.journaledModel(req)
	if err != nil {
		return model.Message{}, err
	}
	st.usage.Add(resp.Usage)
	st.account("model", answered, resp.Usage)
	msg := resp.Message
	u := resp.Usage
	msg.Metrics = &model.MessageMetrics{Usage: u}
	msg.CreatedAt = time.Now().Unix()
	for i := range msg.ToolCalls {
		if msg.ToolCalls[i].ID == "" {
			st.callSeq++
			msg.ToolCalls[i].ID = fmt.Sprintf("call_%s_%d", st.out.RunID, st.callSeq)
		}
	}
	if st.sink.on() {
		e := st.ev(run.EventModelRequestCompleted)
		e.Model, e.ModelProvider = st.out.Model, st.out.ModelProvider
		e.ModelRequestUsage = &run.ModelRequestUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			TotalTokens: u.TotalTokens, TimeToFirstToken: u.TimeToFirstToken, ReasoningTokens: u.ReasoningTokens,
			CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
		st.emit(e)
	}
	return msg, nil
}

// askModel calls the model, then the fallback models its failure allows, and
// returns the response and the model that gave it.
func (st *state) askModel(req *model.Request) (model.Response, model.Info, error) {
	p := st.p
	resp, started, err := st.streamModel(p.model, req)
	answered := p.info
	if err != nil && !started && st.ctx.Err() == nil {
		for _, fb := range p.fallback.For(err) {
			info := fb.Info()
			slog.WarnContext(st.ctx, "agent: model failed, trying a fallback model",
				"run_id", st.out.RunID, "model", answered.ID, "fallback", info.ID, "error", err)
			var ferr error
			resp, started, ferr = st.streamModel(fb, req)
			if ferr == nil {
				answered, err = info, nil
				st.out.Model, st.out.ModelProvider = info.ID, info.Provider
				break
			}
			if started || st.ctx.Err() != nil {
				err = ferr
				break
			}
		}
	}
	return resp, answered, err
}

// streamModel runs one call of m. started reports whether any chunk arrived
// (after which a failure cannot be retried elsewhere: its content may already
// have reached the consumer). The response's Usage carries the call's
// duration and time to first token.
func (st *state) streamModel(m model.Model, req *model.Request) (model.Response, bool, error) {
	// The call's state lives in the run and the yield function is bound once
	// per run: a range-over-func loop here would move its variables, the
	// results and the loop body to the heap on every model call.
	if st.yieldChunk == nil {
		st.yieldChunk = st.onChunk
	}
	st.call = modelStream{begin: time.Now()}
	m.Stream(st.ctx, req.For(m))(st.yieldChunk)
	s := &st.call
	if s.err != nil {
		return model.Response{}, s.started, s.err
	}
	if err := st.ctx.Err(); err != nil {
		return model.Response{}, s.started, err
	}
	resp := s.acc.Value()
	resp.Usage.Duration = time.Since(s.begin).Seconds()
	resp.Usage.TimeToFirstToken = s.first
	return resp, s.started, nil
}

// modelStream is the state of the model call streamModel is running.
type modelStream struct {
	acc     model.Accumulator
	started bool
	first   float64
	begin   time.Time
	err     error
}

// onChunk takes one chunk of the model call streamModel is running.
func (st *state) onChunk(c *model.Chunk, err error) bool {
	s := &st.call
	if err != nil {
		s.err = err
		return false
	}
	s.started = true
	var now time.Time // one clock read for both first-token times
	if s.first == 0 && (c.Content != "" || c.ReasoningContent != "" || len(c.ToolCalls) > 0) {
		now = time.Now()
		s.first = now.Sub(s.begin).Seconds()
	}
	if c.Content != "" {
		if st.ttft == 0 {
			if now.IsZero() {
				now = time.Now()
			}
			st.ttft = now.Sub(st.start).Seconds()
		}
		if st.sink.live() {
			t := run.EventRunContent
			if st.intermediate {
				t = run.EventRunIntermediateContent
			}
			e := st.ev(t)
			e.Content, e.ContentType = c.Content, "str"
			st.sendDelta(e)
		}
	}
	if c.ReasoningContent != "" && st.sink.live() {
		e := st.ev(run.EventReasoningContentDelta)
		e.ReasoningContent = c.ReasoningContent
		st.sendDelta(e)
	}
	s.acc.Add(c)
	return true
}

// account adds one call's tokens to the run's per-model breakdown (Agno's
// metrics.details, keyed by model role, one entry per provider and id).
func (st *state) account(role string, info model.Info, u model.Usage) {
	u.Duration, u.TimeToFirstToken = 0, 0
	if st.details == nil {
		st.details = make(map[string][]run.ModelMetrics, 1)
	}
	list := st.details[role]
	for i := range list {
		if list[i].ID == info.ID && list[i].Provider == info.Provider {
			list[i].Usage.Add(u)
			return
		}
	}
	st.details[role] = append(list, run.ModelMetrics{ID: info.ID, Provider: info.Provider, Usage: u})
}

// reason runs the reasoning model first and hands its reasoning to the main
// model in the system message. It reports whether the run goes on.
func (st *state) reason() bool {
	if st.sink.on() {
		st.emit(st.ev(run.EventReasoningStarted))
	}
	var req model.Request
	req.History, req.Messages, _ = st.conversation(st.msgs, int(st.histAt), nil)
	var acc model.Accumulator
	for c, err := range st.p.reasoning.Stream(st.ctx, req.For(st.p.reasoning)) {
		if err != nil {
			st.finishErr(fmt.Errorf("reasoning model: %w", err))
			return false
		}
		if st.sink.live() {
			delta := c.ReasoningContent
			if delta == "" {
				delta = c.Content
			}
			if delta != "" {
				e := st.ev(run.EventReasoningContentDelta)
				e.ReasoningContent = delta
				st.sendDelta(e)
			}
		}
		acc.Add(c)
	}
	if st.ctx.Err() != nil {
		st.finishCancelled()
		return false
	}
	resp := acc.Response()
	st.usage.Add(resp.Usage)
	st.account("reasoning_model", st.p.reasoning.Info(), resp.Usage)
	text := resp.Message.ReasoningContent
	if text == "" {
		text = resp.Message.Content
	}
	step := run.ReasoningStep{Title: "Reasoning", Reasoning: text}
	st.out.ReasoningContent = text
	st.out.ReasoningSteps = []run.ReasoningStep{step}
	rm := resp.Message
	u := resp.Usage
	rm.Metrics = &model.MessageMetrics{Usage: u}
	st.out.ReasoningMessages = []model.Message{rm}
	if st.sink.on() {
		e := st.ev(run.EventReasoningStep)
		e.ReasoningStep = &step
		e.ReasoningContent = text
		st.emit(e)
		e = st.ev(run.EventReasoningCompleted)
		e.ReasoningSteps = st.out.ReasoningSteps
		e.ReasoningContent = text
		st.emit(e)
	}
	block := "<reasoning>\n" + text + "\n</reasoning>"
	if len(st.msgs) > 0 && st.msgs[0].Role == model.RoleSystem {
		st.msgs[0].Content += "\n\n" + block
	} else {
		st.msgs = append([]model.Message{{Role: model.RoleSystem, Content: block}}, st.msgs...)
		st.histAt++
	}
	return true
}

// complete ends the run with the model's answer (parsed when structured).
func (st *state) complete(content string) {
	content, ok := st.finishAnswer(content)
	if !ok {
		return
	}
	out := st.out
	if st.schema != nil {
		v, err := st.schema.parse(content)
		if err != nil {
			st.finishErr(err)
			return
		}
		out.Content, out.ContentType = v, st.schema.format.Name
	} else {
		out.Content, out.ContentType = content, "str"
	}
	out.Status = run.StatusCompleted
	st.finalize()
	if st.sink.on() {
		e := st.ev(run.EventRunContentCompleted)
		st.emit(e)
	}
	if len(st.a.conf().PostHooks) > 0 && !st.checkOutput() {
		return
	}
	if st.a.mem != nil {
		st.afterRun()
		st.finalize() // the memory and summary models' tokens count in the run's metrics
	}
	if !st.sink.on() {
		st.persist()
		return
	}
	if h := st.a.conf().BeforeStore; h != nil {
		// What it adds (a team's task list in session_state) is the
		// completed event's too, stored or not.
		h(st.ctx, out)
	}
	e := st.ev(run.EventRunCompleted)
	e.Content, e.ContentType = out.Content, out.ContentType
	e.ReasoningContent = out.ReasoningContent
	e.ReasoningSteps = out.ReasoningSteps
	e.Metrics = out.Metrics
	e.Images, e.Videos, e.Audio, e.Files, e.ResponseAudio = out.Images, out.Videos, out.Audio, out.Files, out.ResponseAudio
	e.SessionState = out.SessionState
	e.MemberResponses = out.MemberResponses
	if mr := st.a.conf().MemberRuns; mr != nil {
		// Every member run, stored with the run or not (a team's
		// store_member_responses only decides what is stored).
		e.MemberResponses = mr(st.ctx, out)
	}
	st.terminal(e)
}

// refuseStart reports whether the run must not start because its session
// or history could not be read (err, from loadContext): it is then not
// stored and sends no event; Run returns the error and Stream yields it
// alone. A read that failed because the run was cancelled is not a refusal:
// the run starts and ends CANCELLED.
func (st *state) refuseStart(err error) bool {
	if err == nil || st.ctx.Err() != nil {
		return false
	}
	st.extras().startErr = err
	return true
}

// terminal stores the final event with the run, persists it, then sends the
// event: a client that sees the end of a run can read the run back. A run
// that could not be stored ends with a StorageError RunError instead, never
// with an event saying it completed (or paused, failed or was cancelled).
func (st *state) terminal(e run.Event) {
	st.record(e)
	st.persist()
	if st.persistErr != nil {
		e = st.ev(run.EventRunError)
		e.Content, e.ErrorType = storageErrorContent, "StorageError"
	}
	st.send(e)
}

// finishErr ends the run as ERROR, or CANCELLED when the context ended.
func (st *state) finishErr(err error) {
	if st.ctx.Err() != nil {
		st.finishCancelled()
		return
	}
	st.err = err
	out := st.out
	out.Status = run.StatusError
	out.Content, out.ContentType = err.Error(), "str"
	st.finalize()
	if !st.sink.on() {
		st.persist()
		return
	}
	e := st.ev(run.EventRunError)
	e.Content = out.Content
	e.ErrorType = errorType(err)
	if t, id, data, ok := checkFields(err); ok {
		e.ErrorType, e.ErrorID, e.AdditionalData = t, id, data
	}
	st.terminal(e)
}

func (st *state) finishCancelled() {
	cause := context.Cause(st.ctx)
	if cause == nil {
		cause = context.Canceled
	}
	if !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		cause = fmt.Errorf("%w: %w", context.Canceled, cause)
	}
	st.err = cause
	out := st.out
	out.Status = run.StatusCancelled
	reason := cause.Error()
	out.Content, out.ContentType = fmt.Sprintf("run %s was cancelled: %s", out.RunID, reason), "str"
	st.finalize()
	if !st.sink.on() {
		st.persist()
		return
	}
	e := st.ev(run.EventRunCancelled)
	e.Reason = reason
	st.terminal(e)
}

// finalize fills metrics, the stored messages (history excluded) and state.
func (st *state) finalize() {
	out := st.out
	out.Metrics = &run.Metrics{
		Usage:            st.usage,
		Duration:         st.prior() + time.Since(st.start).Seconds(),
		TimeToFirstToken: st.ttft,
		Details:          st.details,
	}
	// Message timings add up in st.usage; the run's own are the fields above.
	out.Metrics.Usage.Duration, out.Metrics.Usage.TimeToFirstToken = 0, 0
	if out.Metrics.TotalTokens == 0 {
		out.Metrics.TotalTokens = out.Metrics.InputTokens + out.Metrics.OutputTokens
	}
	// The run's own messages, without the history (a full slice: appending
	// to it reallocates).
	out.Messages = st.msgs[:len(st.msgs):len(st.msgs)]
	if st.ext != nil {
		out.SessionState = st.ext.sessionState
	}
	if out.Status != run.StatusPaused {
		out.Requirements = nil
	}
}

// errorType names an error the way Agno's RunError error_type does.
func errorType(err error) string {
	switch {
	case errors.Is(err, ErrOutputParse):
		return "OutputParsingError"
	case errors.Is(err, model.ErrRateLimit):
		return "ModelRateLimitError"
	case errors.Is(err, model.ErrAuth):
		return "ModelAuthenticationError"
	case errors.Is(err, model.ErrContextLength):
		return "ContextWindowExceededError"
	case errors.Is(err, ErrStorage):
		return "StorageError"
	}
	var pe *model.ProviderError
	if errors.As(err, &pe) || strings.HasPrefix(err.Error(), "model:") {
		return "ModelProviderError"
	}
	return "RunError"
}
