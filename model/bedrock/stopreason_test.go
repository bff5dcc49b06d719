package bedrock

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// An answer Converse stopped before any content, because its content filter
// caught it (content_filtered) or the context window was full
// (model_context_window_exceeded), is an error naming the reason, not an
// empty answer the run records as complete; after some content the content
// is kept with its stop reason.
func TestStopReason_EmptyFilteredOrOverflowedAnswerIsAnError(t *testing.T) {
	t.Parallel()
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}
	for reason, want := range map[string]error{"content_filtered": model.ErrBadRequest, "model_context_window_exceeded": model.ErrContextLength} {
		rec := newRecorder(t, "application/json", []byte(`{"output":{"message":{"role":"assistant","content":[]}},"stopReason":"`+reason+`","usage":`+usageJSON+`}`))
		_, err := newTestModel(t, rec.URL, model.Params{}).Invoke(context.Background(), req)
		if !errors.Is(err, want) || !strings.Contains(fmtErr(err), reason) {
			t.Errorf("Invoke, %s: err = %v, want %v naming it", reason, err, want)
		}
		_, err = streamOf(t, bytes.Join([][]byte{msgStart(), msgStop(reason), metadata()}, nil), req)
		if !errors.Is(err, want) || !strings.Contains(fmtErr(err), reason) {
			t.Errorf("Stream, %s: err = %v, want %v naming it", reason, err, want)
		}
	}
	r, err := streamOf(t, bytes.Join([][]byte{msgStart(), textDelta("0", "Part"), blockStop("0"), msgStop("content_filtered"), metadata()}, nil), req)
	if err != nil || r.Message.Content != "Part" || r.StopReason != "content_filtered" {
		t.Errorf("cut answer %q stop %q err %v", r.Message.Content, r.StopReason, err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// An answer Converse stopped before any content because the model's output
// or tool call did not parse (malformed_model_output, malformed_tool_use) is
// a retryable error naming the reason, not an empty answer the run records
// as complete.
func TestStopReason_EmptyMalformedAnswerIsAnError(t *testing.T) {
	t.Parallel()
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}
	for _, reason := range []string{"malformed_model_output", "malformed_tool_use"} {
		rec := newRecorder(t, "application/json", []byte(`{"output":{"message":{"role":"assistant","content":[]}},"stopReason":"`+reason+`","usage":`+usageJSON+`}`))
		_, err := newTestModel(t, rec.URL, model.Params{}).Invoke(context.Background(), req)
		if !errors.Is(err, model.ErrServer) || !model.Retryable(err) || !strings.Contains(fmtErr(err), reason) {
			t.Errorf("Invoke, %s: err = %v, want a retryable ErrServer naming it", reason, err)
		}
		_, err = streamOf(t, bytes.Join([][]byte{msgStart(), msgStop(reason), metadata()}, nil), req)
		if !errors.Is(err, model.ErrServer) || !model.Retryable(err) || !strings.Contains(fmtErr(err), reason) {
			t.Errorf("Stream, %s: err = %v, want a retryable ErrServer naming it", reason, err)
		}
	}
}
