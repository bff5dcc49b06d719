package gemini

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentryhq/agentry/model"
)

// An error body that is not Gemini's envelope (a proxy's page) was cut at
// byte 512, splitting a character: the error, the logs and the stored run
// got invalid UTF-8. It is cut at a character, within
// model.MaxErrorMessage.
func TestErrorMessage_CutAtACharacterWithinTheBound(t *testing.T) {
	msg, _ := errorMessage([]byte("x"+strings.Repeat("é", 2000)), http.StatusBadGateway)
	if !utf8.ValidString(msg) || len(msg) > model.MaxErrorMessage+len("…") || !strings.HasSuffix(msg, "…") {
		t.Errorf("%d bytes, valid UTF-8 %v", len(msg), utf8.ValidString(msg))
	}
}
