package azure_test

import (
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model/azure"
)

// An endpoint that is not a resource URL (no scheme, a pasted target URI with
// its query) is refused in Azure's terms, not turned into a request URL
// that cannot reach the deployment.
func TestNew_RefusesAnEndpointThatIsNotAResourceURL(t *testing.T) {
	t.Parallel()
	for _, e := range []string{
		"my-resource.openai.azure.com",
		"https://my-resource.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
		"https://my-resource.openai.azure.com#x",
	} {
		_, err := azure.New(azure.Config{Endpoint: e, Model: "gpt-4o", APIKey: "k"})
		if err == nil || !strings.Contains(err.Error(), "AZURE_OPENAI_ENDPOINT") {
			t.Errorf("endpoint %q: err = %v, want an error naming the endpoint setting", e, err)
		}
	}
	if _, err := azure.New(azure.Config{Endpoint: "https://my-resource.openai.azure.com/", Model: "gpt-4o", APIKey: "k"}); err != nil {
		t.Errorf("resource URL refused: %v", err)
	}
}

// The refusal names the endpoint without what may be a secret in it: a
// password in its user part or the query of a pasted URL (a key, a SAS
// token) were quoted as given.
func TestNew_EndpointRefusalQuotesNoSecret(t *testing.T) {
	t.Parallel()
	for _, e := range []string{
		"https://u:hunter2@my-resource.openai.azure.com/openai/deployments/gpt-4o",
		"https://my-resource.openai.azure.com/?api-key=hunter2",
		"https://my-resource.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21&sig=hunter2",
		"https://my-resource.openai.azure.com#key=hunter2",
		"ftp://u:hunter2@my-resource.openai.azure.com",
		"https://u:hun/ter2@my-resource.openai.azure.com",
	} {
		_, err := azure.New(azure.Config{Endpoint: e, Model: "gpt-4o", APIKey: "k"})
		if err == nil || !strings.Contains(err.Error(), "AZURE_OPENAI_ENDPOINT") {
			t.Errorf("endpoint %q: err = %v, want a refusal naming the endpoint setting", e, err)
			continue
		}
		if strings.Contains(err.Error(), "hun") {
			t.Errorf("endpoint %q: the refusal %q repeats a secret", e, err)
		}
		if !strings.Contains(err.Error(), "my-resource.openai.azure.com") && !strings.Contains(e, "/ter2") {
			t.Errorf("endpoint %q: the refusal %q does not name the host", e, err)
		}
	}
}
