package gemini

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
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
