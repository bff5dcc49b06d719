package gemini

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// Application Default Credentials from `gcloud auth application-default
// login` (an authorized_user file) refresh their access token through the
// token endpoint about every hour. The token source outlives the call that
// first asked for a token: once that call's context is done (it always is,
// when the call returns), a later refresh must still reach the endpoint, or
// every Vertex AI call fails from the first token's expiry on.
func TestDefaultTokenSource_RefreshesAfterTheFirstCallsContextEnds(t *testing.T) {
	var issued atomic.Int32
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		n := issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		// Expired on arrival (the oauth2 package refreshes 10s early):
		// every call refreshes.
		fmt.Fprintf(w, `{"access_token":"ya29.token-%d","token_type":"Bearer","expires_in":1}`, n)
	}))
	t.Cleanup(tokens.Close)
	creds := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(creds, []byte(`{"type":"authorized_user","client_id":"cid","client_secret":"cs","refresh_token":"rt","token_uri":"`+tokens.URL+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", creds)

	ts := DefaultTokenSource()
	first, cancel := context.WithCancel(context.Background())
	tok, err := ts(first)
	cancel() // the first call returned
	if err != nil || tok != "ya29.token-1" {
		t.Fatalf("first token %q, %v; want ya29.token-1", tok, err)
	}
	tok, err = ts(context.Background())
	if err != nil || tok != "ya29.token-2" {
		t.Fatalf("token after the first call's context ended: %q, %v; want a refreshed ya29.token-2", tok, err)
	}
}

// A call cancelled while its Vertex AI access token is being fetched ends
// with the context's error, as any other cancelled call does, not as an
// authentication failure: callers tell a cancelled run from a failed one
// by it.
func TestVertex_CancelledWhileFetchingATokenIsCancellation(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", `{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}]}`)
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}
	for _, streamed := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		m, err := New(Config{Model: "gemini-2.5-flash", Vertex: true, Project: "p", Location: "us-central1", BaseURL: rec.URL,
			TokenSource: func(ctx context.Context) (string, error) {
				cancel() // the caller gives up while the token is on its way
				<-ctx.Done()
				return "", ctx.Err()
			}})
		if err != nil {
			t.Fatal(err)
		}
		if streamed {
			for _, e := range m.Stream(ctx, req) {
				err = e
			}
		} else {
			_, err = m.Invoke(ctx, req)
		}
		if !errors.Is(err, context.Canceled) || errors.Is(err, model.ErrAuth) {
			t.Errorf("stream %v: err = %v, want context.Canceled and not ErrAuth", streamed, err)
		}
	}
}
