package gemini

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// An answer Gemini blocked before producing anything (finishReason SAFETY,
// PROHIBITED_CONTENT, …, no parts) is an error naming the reason, as a
// blocked prompt is, not an empty answer the run records as complete. An
// answer cut off after some content keeps that content and its reason.
func TestDecode_BlockedAnswerIsAnError(t *testing.T) {
	t.Parallel()
	const blocked = `{"candidates":[{"finishReason":"SAFETY","index":0,"safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]}],` +
		`"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
	for _, streamed := range []bool{false, true} {
		err := answerErr(t, blocked, streamed)
		if !errors.Is(err, model.ErrBadRequest) || !strings.Contains(fmtErr(err), "SAFETY") || model.Retryable(err) {
			t.Errorf("stream %v: err = %v, want a non-retryable ErrBadRequest naming SAFETY", streamed, err)
		}
	}
	cut := "data: " + respJSON(textPart("The first step is"), "", false) + "\n\n" +
		`data: {"candidates":[{"finishReason":"SAFETY","index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":4},"responseId":"resp-1"}` + "\n\n"
	var acc model.Accumulator
	for c, err := range decodeStream(strings.NewReader(cut)) {
		if err != nil {
			t.Fatal(err)
		}
		acc.Add(c)
	}
	if r := acc.Response(); r.Message.Content != "The first step is" || r.StopReason != "SAFETY" {
		t.Errorf("cut answer %q stop %q", r.Message.Content, r.StopReason)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// An answer that ended in a malformed function call before any content
// (finishReason MALFORMED_FUNCTION_CALL: the model wrote code instead of a
// call, or a call that does not parse) is a retryable error naming the
// reason, not an empty answer the run records as complete.
func TestDecode_MalformedFunctionCallIsAnError(t *testing.T) {
	t.Parallel()
	const malformed = `{"candidates":[{"content":{"parts":[],"role":"model"},"finishReason":"MALFORMED_FUNCTION_CALL","finishMessage":"Malformed function call: print(default_api.get_weather(city='Paris'))","index":0}],` +
		`"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
	for _, streamed := range []bool{false, true} {
		err := answerErr(t, malformed, streamed)
		if !errors.Is(err, model.ErrServer) || !strings.Contains(fmtErr(err), "MALFORMED_FUNCTION_CALL") || !model.Retryable(err) {
			t.Errorf("stream %v: err = %v, want a retryable ErrServer naming MALFORMED_FUNCTION_CALL", streamed, err)
		}
	}
}

// answerErr is the error of a call whose only answer is body (a
// GenerateContentResponse), streamed or not.
func answerErr(t *testing.T, body string, streamed bool) error {
	t.Helper()
	answer, ctype := body, "application/json"
	if streamed {
		answer, ctype = "data: "+body+"\r\n\r\n", "text/event-stream"
	}
	rec := newRecorder(t, ctype, answer)
	m, err := New(Config{APIKey: "k", BaseURL: rec.URL, Model: "gemini-2.5-flash"})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}
	if streamed {
		for _, e := range m.Stream(context.Background(), req) {
			if e != nil {
				err = e
			}
		}
		return err
	}
	r, err := m.Invoke(context.Background(), req)
	if err == nil {
		t.Logf("Invoke answered %+v", r)
	}
	return err
}
