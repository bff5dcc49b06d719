package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// A non-streamed answer larger than model.MaxResponseBody is refused as
// such (ErrMalformedResponse naming the limit), as every other provider
// refuses it, not as a JSON body cut short.
func TestInvoke_AnswerPastTheBodyLimitIsNamed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"`)
		chunk := strings.Repeat("a", 1<<20)
		for range 33 {
			io.WriteString(w, chunk)
		}
		io.WriteString(w, `"}],"model":"claude","stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	t.Cleanup(srv.Close)
	m, err := New(Config{APIKey: "sk-ant-test-key", BaseURL: srv.URL, Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}})
	if !errors.Is(err, model.ErrMalformedResponse) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v; want ErrMalformedResponse naming the size limit", err)
	}
}
