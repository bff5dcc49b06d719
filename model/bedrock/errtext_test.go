package bedrock

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentryhq/agentry/model"
)

// An error body that is not Bedrock's envelope (a proxy's page) was cut at
// byte 512, splitting a character: the error, the logs and the stored run
// got invalid UTF-8. It is cut at a character, within
// model.MaxErrorMessage.
func TestHTTPError_CutAtACharacterWithinTheBound(t *testing.T) {
	var pe *model.ProviderError
	if !errors.As(httpError(http.StatusBadGateway, nil, []byte("x"+strings.Repeat("é", 2000))), &pe) {
		t.Fatal("not a ProviderError")
	}
	if !utf8.ValidString(pe.Message) || !strings.HasSuffix(pe.Message, "…") {
		t.Errorf("%d bytes, valid UTF-8 %v", len(pe.Message), utf8.ValidString(pe.Message))
	}
}
