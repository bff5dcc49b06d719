package gemini

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// cloudPlatformScope is the OAuth scope Vertex AI requests need.
const cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

// DefaultTokenSource returns a TokenSource backed by Google Application
// Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's user
// credentials, or the metadata server). Credentials are looked up on the
// first call, not here, and tokens are cached and refreshed before expiry.
func DefaultTokenSource() func(ctx context.Context) (string, error) {
	var (
		mu sync.Mutex
		ts oauth2.TokenSource
	)
	return func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if ts == nil {
			// The token source refreshes through the context it is made
			// with (for gcloud's user credentials), long after this call
			// returns and its context is done: it keeps ctx's values (an
			// oauth2.HTTPClient) but not its cancellation or deadline.
			creds, err := google.FindDefaultCredentials(context.WithoutCancel(ctx), cloudPlatformScope)
			if err != nil {
				return "", fmt.Errorf("application default credentials: %w (run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS)", err)
			}
			ts = oauth2.ReuseTokenSource(nil, creds.TokenSource)
		}
		tok, err := ts.Token()
		if err != nil {
			return "", err
		}
		return tok.AccessToken, nil
	}
}
