package anthropic

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentryhq/agentry/model"
)

// An error body that is not Anthropic's envelope (a proxy's page) was cut at
// byte 512, splitting a character, and a stream's error frame was kept
// whole: the error, the logs and the stored run got invalid UTF-8 or the
// whole text. Both are cut at a character, within model.MaxErrorMessage.
func TestErrors_CutAtACharacterWithinTheBound(t *testing.T) {
	body := "x" + strings.Repeat("é", 2000) // "é" straddles byte 512
	var pe *model.ProviderError
	if !errors.As(httpError(http.StatusBadGateway, nil, []byte(body)), &pe) {
		t.Fatal("not a ProviderError")
	}
	se := streamError("overloaded_error", strings.Repeat("é", 5000))
	for name, msg := range map[string]string{"http": pe.Message, "stream": se.Message} {
		if !utf8.ValidString(msg) || len(msg) > model.MaxErrorMessage+len("…") || !strings.HasSuffix(msg, "…") {
			t.Errorf("%s: %d bytes, valid UTF-8 %v: %q…", name, len(msg), utf8.ValidString(msg), msg[:min(len(msg), 40)])
		}
	}
	if !errors.Is(se, model.ErrServer) {
		t.Errorf("stream error kind: %v", se)
	}
}
