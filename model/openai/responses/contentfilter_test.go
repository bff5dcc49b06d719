package responses

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// A response the content filter stopped before any output (status
// incomplete, incomplete_details.reason content_filter) is an error naming
// the filter, not an empty answer; one stopped after some text keeps it.
func TestContentFilter_BeforeAnyOutputIsAnError(t *testing.T) {
	t.Parallel()
	filtered := strings.Replace(responseObj("incomplete"), `"incomplete_details":null`, `"incomplete_details":{"reason":"content_filter"}`, 1)
	rec := newRecorder(t, "application/json", filtered)
	m, err := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: "o4-mini"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}})
	if !errors.Is(err, model.ErrBadRequest) || !strings.Contains(err.Error(), "content filter") {
		t.Errorf("Invoke of a filtered response: %v, want ErrBadRequest naming the content filter", err)
	}

	_, err = drainStream(t, sseBody(created, ev("response.incomplete", `"response":`+filtered)))
	if !errors.Is(err, model.ErrBadRequest) || !strings.Contains(err.Error(), "content filter") {
		t.Errorf("Stream of a filtered response: %v, want ErrBadRequest naming the content filter", err)
	}

	r, err := drainStream(t, sseBody(created, textDelta("Partly"), ev("response.incomplete", `"response":`+filtered)))
	if err != nil || r.Message.Content != "Partly" || r.StopReason != "content_filter" {
		t.Errorf("Stream filtered after text: %q %q, %v", r.Message.Content, r.StopReason, err)
	}
}
