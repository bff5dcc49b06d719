package guardrail

import (
	"strings"
	"testing"
)

// A base URL that only starts with http:// or https:// was taken ("http://"
// with no host, a space inside, a query or fragment the path was appended
// after) and every moderation request then failed, so every run ended in
// ERROR; NewModeration refuses it.
func TestModeration_RefusesABaseURLWithoutAHost(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://", "https://", "https:///v1", "http://:8080/v1", "https://api.openai.com/v1?x=1", "https://api.openai.com/v1#f", "https://api openai.com/v1"} {
		if _, err := NewModeration(ModerationConfig{APIKey: "sk", BaseURL: u}); err == nil || !strings.Contains(err.Error(), "base URL") {
			t.Errorf("NewModeration(base URL %q): err = %v, want it refused", u, err)
		}
	}
	for _, u := range []string{"https://api.openai.com/v1", "http://127.0.0.1:8080/v1/", "HTTPS://proxy.example/openai"} {
		if _, err := NewModeration(ModerationConfig{APIKey: "sk", BaseURL: u}); err != nil {
			t.Errorf("NewModeration(base URL %q): %v", u, err)
		}
	}
}
