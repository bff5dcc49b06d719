package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentryhq/agentry/model"
)

// chatResponse is a "chat.completion" object.
type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content          string         `json:"content"`
			Refusal          string         `json:"refusal"`
			ReasoningContent string         `json:"reasoning_content"`
			Reasoning        string         `json:"reasoning"`
			ToolCalls        []wireToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
	errorEnvelope
}

// Invoke sends one non-streaming request and returns the whole answer.
func (m *Model) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	ctx, cancel := m.params.WithTimeout(ctx)
	defer cancel()
	body, err := m.buildRequest(req, false)
	if err != nil {
		return nil, err
	}
	resp, secrets, err := m.post(ctx, body, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return m.readResponse(ctx, resp.Body, secrets)
}

// readResponse reads and decodes a completion; secrets are the credentials
// sent, kept out of any quote of the answer in an error.
func (m *Model) readResponse(ctx context.Context, body io.Reader, secrets []string) (*model.Response, error) {
	data, err := io.ReadAll(io.LimitReader(body, maxResponseBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("openai: reading response: %w", ctx.Err())
		}
		return nil, fmt.Errorf("openai: reading response: %w: %w", model.ErrMalformedResponse, err)
	}
	if len(data) > maxResponseBody {
		return nil, fmt.Errorf("openai: response larger than %d bytes: %w", maxResponseBody, model.ErrMalformedResponse)
	}
	return m.decodeResponse(data, secrets...)
}

func (m *Model) decodeResponse(data []byte, secrets ...string) (*model.Response, error) {
	var cr chatResponse
	if err := json.Unmarshal(data, &cr); err != nil {
		return nil, fmt.Errorf("openai: response %q is not a chat.completion: %w: %v", snippet(data, secrets), model.ErrMalformedResponse, err)
	}
	if e := cr.err(); e != nil {
		return nil, m.streamError(e)
	}
	choice := -1
	for i := range cr.Choices {
		if cr.Choices[i].Index == 0 {
			choice = i
			break
		}
	}
	if choice < 0 {
		return nil, fmt.Errorf("openai: response has no choices: %w", model.ErrMalformedResponse)
	}
	ch := &cr.Choices[choice]
	out := &model.Response{
		Message: model.Message{
			Role:             model.RoleAssistant,
			Content:          ch.Message.Content,
			ReasoningContent: ch.Message.ReasoningContent,
		},
		StopReason: ch.FinishReason,
		ModelID:    cr.Model,
	}
	if out.Message.Content == "" {
		// A refusal replaces content; surfacing it beats an empty answer.
		out.Message.Content = ch.Message.Refusal
	}
	if out.Message.ReasoningContent == "" {
		out.Message.ReasoningContent = ch.Message.Reasoning
	}
	for i, tc := range ch.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, model.ToolCall{
			ID: id, Name: tc.Function.Name, Arguments: string(tc.Function.Arguments),
		})
	}
	if ch.FinishReason == "content_filter" && out.Message.Content == "" && out.Message.ReasoningContent == "" && len(out.Message.ToolCalls) == 0 {
		return nil, m.filtered()
	}
	if cr.Usage != nil {
		out.Usage = *cr.Usage.usage()
		if out.Usage.TotalTokens == 0 {
			out.Usage.TotalTokens = out.Usage.InputTokens + out.Usage.OutputTokens
		}
	}
	return out, nil
}
