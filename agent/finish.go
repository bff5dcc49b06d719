package agent

import (
	"fmt"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// DefaultParserModelPrompt is the parser model's system message when
// Config.ParserModelPrompt is empty (Agno's default).
const DefaultParserModelPrompt = "You are tasked with creating a structured output from the provided user message."

// finishAnswer turns the main model's answer into the run's final text: the
// output model, when set, rewrites it from the conversation; the parser model,
// when set and the run has an output schema, converts it to that schema. It
// reports false when the run ended (ERROR or CANCELLED) instead.
func (st *state) finishAnswer(content string) (string, bool) {
	if st.p.outputModel != nil {
		var ok bool
		if content, ok = st.writeWithOutputModel(); !ok {
			return "", false
		}
	}
	if st.p.parserModel != nil && st.schema != nil {
		var ok bool
		if content, ok = st.parseWithParserModel(content); !ok {
			return "", false
		}
	}
	return content, true
}

// writeWithOutputModel asks the output model for the final answer, given the
// conversation without the main model's last answer (Agno's output_model);
// its deltas are the run's RunContent.
func (st *state) writeWithOutputModel() (string, bool) {
	msgs, at := st.msgs, int(st.histAt)
	if n := len(msgs); n > 0 && msgs[n-1].Role == model.RoleAssistant {
		msgs = msgs[:n-1]
	}
	if prompt := st.a.conf().OutputModelPrompt; prompt != "" {
		msgs = append([]model.Message(nil), msgs...)
		if len(msgs) > 0 && msgs[0].Role == model.RoleSystem {
			msgs[0].Content = prompt
		} else {
			msgs = append([]model.Message{{Role: model.RoleSystem, Content: prompt}}, msgs...)
			at++
		}
	}
	if st.sink.on() {
		st.emit(st.ev(run.EventOutputModelResponseStarted))
	}
	req := &model.Request{}
	req.History, req.Messages, _ = st.conversation(msgs, at, nil)
	if st.schema != nil && st.p.parserModel == nil {
		req.ResponseFormat = st.schema.format
	}
	st.intermediate = false
	resp, _, err := st.streamModel(st.p.outputModel, req)
	if err != nil {
		st.finishErr(fmt.Errorf("output model: %w", err))
		return "", false
	}
	st.usage.Add(resp.Usage)
	st.account("output_model", st.p.outputModel.Info(), resp.Usage)
	if st.sink.on() {
		st.emit(st.ev(run.EventOutputModelResponseCompleted))
	}
	return resp.Message.Content, true
}

// parseWithParserModel asks the parser model to turn the free-text answer
// into the output schema (Agno's parser_model); the main model was not given
// the schema.
func (st *state) parseWithParserModel(content string) (string, bool) {
	prompt := st.a.conf().ParserModelPrompt
	if prompt == "" {
		prompt = DefaultParserModelPrompt
	}
	if st.sink.on() {
		st.emit(st.ev(run.EventParserModelResponseStarted))
	}
	req := &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: prompt},
			{Role: model.RoleUser, Content: content},
		},
		ResponseFormat: st.schema.format,
	}
	var acc model.Accumulator
	for c, err := range st.p.parserModel.Stream(st.ctx, req) {
		if err != nil {
			st.finishErr(fmt.Errorf("parser model: %w", err))
			return "", false
		}
		acc.Add(c)
	}
	if st.ctx.Err() != nil {
		st.finishCancelled()
		return "", false
	}
	resp := acc.Response()
	st.usage.Add(resp.Usage)
	st.account("parser_model", st.p.parserModel.Info(), resp.Usage)
	if st.sink.on() {
		st.emit(st.ev(run.EventParserModelResponseCompleted))
	}
	return resp.Message.Content, true
}
