package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// An answer the content filter stopped before any content (finish_reason
// content_filter, as OpenAI and Azure OpenAI send it) is an error naming
// the filter, not an empty answer: nothing reads StopReason, so the run
// completed with no content and no reason. An answer the filter cut after
// some content keeps that content (StopReason says why it ended).
func TestContentFilter_BeforeAnyContentIsAnError(t *testing.T) {
	t.Parallel()
	invoke := `{"id":"chatcmpl-F1","object":"chat.completion","created":1733011200,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null},"finish_reason":"content_filter"}],"usage":{"prompt_tokens":12,"completion_tokens":0,"total_tokens":12}}`
	f := newFake(t, reply{body: invoke})
	_, err := newModel(t, f).Invoke(context.Background(), userReq("something filtered"))
	var pe *model.ProviderError
	if !errors.As(err, &pe) || !errors.Is(err, model.ErrBadRequest) || !strings.Contains(err.Error(), "content filter") {
		t.Errorf("Invoke of a filtered answer: %v, want ErrBadRequest naming the content filter", err)
	}

	stream := newFake(t, reply{events: []string{
		`{"id":"chatcmpl-F2","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"chatcmpl-F2","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}`,
	}})
	_, _, err = drain(t, newModel(t, stream), userReq("something filtered"))
	if !errors.Is(err, model.ErrBadRequest) || !strings.Contains(err.Error(), "content filter") {
		t.Errorf("Stream of a filtered answer: %v, want ErrBadRequest naming the content filter", err)
	}

	cut := newFake(t, reply{events: []string{
		`{"id":"chatcmpl-F3","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Here is"},"finish_reason":null}]}`,
		`{"id":"chatcmpl-F3","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}`,
	}})
	_, resp, err := drain(t, newModel(t, cut), userReq("something half filtered"))
	if err != nil || resp.Message.Content != "Here is" || resp.StopReason != "content_filter" {
		t.Errorf("Stream cut by the filter after content: %+v, %v", resp, err)
	}
}
