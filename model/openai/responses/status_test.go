package responses

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// A response.failed event without an error object is a failure the server
// gave no reason for: a server error (retried), naming the status, not a
// bad request.
func TestStream_FailedWithoutErrorIsAServerError(t *testing.T) {
	t.Parallel()
	for _, failed := range []string{
		`"response":{"id":"r","status":"failed","error":null,"output":[]}`,
		`"response":{"id":"r","status":"failed","output":[]}`,
		``,
	} {
		_, err := drainStream(t, sseBody(created, ev("response.failed", failed)))
		if !errors.Is(err, model.ErrServer) || !strings.Contains(err.Error(), "failed") {
			t.Errorf("%s: err = %v, want ErrServer naming the status", failed, err)
		}
	}
}

// A non-streamed answer that did not complete is an error, never an empty
// success: failed is a server error (with its error when there is one),
// queued or in_progress (background: true, through extra_body) says
// background responses are not supported, cancelled says so.
func TestInvoke_UnfinishedStatusesAreErrors(t *testing.T) {
	t.Parallel()
	withError := strings.Replace(responseObj("failed"), `"error":null`, `"error":{"code":"server_error","message":"The model crashed"}`, 1)
	tests := []struct {
		body string
		want error
		text string
	}{
		{responseObj("failed"), model.ErrServer, "status failed"},
		{withError, model.ErrServer, "The model crashed"},
		{responseObj("queued"), model.ErrBadRequest, "background"},
		{responseObj("in_progress"), model.ErrBadRequest, "background"},
		{responseObj("cancelled"), model.ErrBadRequest, "cancelled"},
	}
	for _, tc := range tests {
		rec := newRecorder(t, "application/json", tc.body)
		m, err := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: "o4-mini"})
		if err != nil {
			t.Fatal(err)
		}
		r, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}})
		if !errors.Is(err, tc.want) || err == nil || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: got %+v, %v; want %v saying %q", tc.body, r, err, tc.want, tc.text)
		}
	}
}

// An answer cut off before any content (incomplete, max_output_tokens) ends
// as the streamed response.incomplete does: no error, stop reason length.
func TestInvoke_IncompleteWithoutContentIsLengthAsStreamed(t *testing.T) {
	t.Parallel()
	body := strings.Replace(responseObj("incomplete", reasoningItem), `"incomplete_details":null`, `"incomplete_details":{"reason":"max_output_tokens"}`, 1)
	rec := newRecorder(t, "application/json", body)
	m, _ := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: "o4-mini"})
	r, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}})
	if err != nil || r.StopReason != "length" {
		t.Fatalf("Invoke: %+v, %v", r, err)
	}
	s, err := drainStream(t, sseBody(created, ev("response.incomplete", `"response":`+body)))
	if err != nil || s.StopReason != "length" {
		t.Fatalf("Stream: %+v, %v", s, err)
	}
}
