package anthropic

import (
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
)

// Anthropic reports overload inside a 200 stream, after message_start and
// ping but before any content: nothing reached the caller yet, so
// model.WithRetry (which retries a stream only until its first chunk) must
// see no chunk before the error and retry it.
func TestWithRetry_RetriesAnErrorEventBeforeAnyContent(t *testing.T) {
	t.Parallel()
	overloaded := sseReply(sseStream(msgStart(), ping(),
		sseEvent("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)))
	ok := sseReply(sseStream(msgStart(), blockStart(0, `{"type":"text","text":""}`), textDelta(0, "done"), blockStop(0), msgDelta("end_turn", 2), msgStop()))
	api := newFakeAPI(t, overloaded, ok)
	m := model.WithRetry(api.model(t), model.RetryConfig{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	_, resp, err := drain(t, m, userReq("hi"))
	if err != nil {
		t.Fatalf("err = %v, want the retry to succeed", err)
	}
	if resp.Message.Content != "done" || resp.ModelID != testModelID || resp.Usage.InputTokens != 472 || resp.Usage.OutputTokens != 2 {
		t.Errorf("response %+v", resp)
	}
	if n := len(api.requests()); n != 2 {
		t.Errorf("requests = %d, want 2 (the overloaded stream, then its retry)", n)
	}
}

// A message with no content block at all still reports its model and usage.
func TestStream_EmptyMessageKeepsModelAndUsage(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, sseReply(sseStream(msgStart(), msgDelta("end_turn", 0), msgStop())))
	chunks, resp, err := drain(t, api.model(t), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) == 0 || resp.ModelID != testModelID || resp.Usage.InputTokens != 472 || resp.Usage.CacheReadTokens != 300 || resp.StopReason != "end_turn" {
		t.Errorf("chunks %d, response %+v", len(chunks), resp)
	}
}
