package anthropic

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// An answer Claude refused before any content (stop_reason "refusal", from
// its streaming classifiers) is an error naming the refusal, as the other
// providers' blocked answers are, not an empty answer nothing reads the
// stop reason of. A refusal after some content keeps that content.
func TestRefusal_BeforeAnyContentIsAnError(t *testing.T) {
	t.Parallel()
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "something refused"}}}
	invoke := `{"id":"msg_01R","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":"refusal","stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":0}}`
	_, err := newFakeAPI(t, jsonReply(200, invoke)).model(t).Invoke(context.Background(), req)
	if !errors.Is(err, model.ErrBadRequest) || !strings.Contains(err.Error(), "refus") {
		t.Errorf("Invoke of a refused answer: %v, want ErrBadRequest naming the refusal", err)
	}

	var got error
	for _, err := range newFakeAPI(t, sseReply(sseStream(msgStart(), msgDelta("refusal", 0), msgStop()))).model(t).Stream(context.Background(), req) {
		if err != nil {
			got = err
		}
	}
	if !errors.Is(got, model.ErrBadRequest) || !strings.Contains(got.Error(), "refus") {
		t.Errorf("Stream of a refused answer: %v, want ErrBadRequest naming the refusal", got)
	}

	var acc model.Accumulator
	for c, err := range newFakeAPI(t, sseReply(sseStream(msgStart(), blockStart(0, `{"type":"text","text":""}`), textDelta(0, "I can help with"),
		blockStop(0), msgDelta("refusal", 5), msgStop()))).model(t).Stream(context.Background(), req) {
		if err != nil {
			t.Fatalf("Stream refused after content: %v", err)
		}
		acc.Add(c)
	}
	if r := acc.Response(); r.Message.Content != "I can help with" || r.StopReason != "refusal" {
		t.Errorf("Stream refused after content: %q, %q", r.Message.Content, r.StopReason)
	}
}
