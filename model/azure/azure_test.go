package azure_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/azure"
	"github.com/agentryhq/agentry/model/modeltest"
	"github.com/agentryhq/agentry/model/openai/openaitest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	modeltest.Run(t, modeltest.Provider{
		New: func(t *testing.T, base string, client *http.Client) model.Model {
			m, err := azure.New(azure.Config{Endpoint: base, Deployment: "prod-4o", Model: "gpt-4o", APIKey: "az-key", HTTPClient: client})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		Reply: func(t *testing.T, s modeltest.Scenario, r *http.Request, body []byte) modeltest.Reply {
			if r.URL.Path != "/openai/deployments/prod-4o/chat/completions" || r.URL.RawQuery != "api-version=2024-10-21" {
				t.Errorf("request to %s", r.URL)
			}
			if r.Header.Get("api-key") != "az-key" || r.Header.Get("Authorization") != "" {
				t.Errorf("auth headers api-key=%q Authorization=%q", r.Header.Get("api-key"), r.Header.Get("Authorization"))
			}
			if s == modeltest.Unauthorized {
				return modeltest.JSON(401, `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}`)
			}
			return openaitest.Reply(t, s, r, body)
		},
		Usage: openaitest.Usage,
	})
}

func TestNew_EntraTokensAndEnvironment(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []*http.Request
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		rep := openaitest.Reply(t, modeltest.Text, r, nil)
		w.Header().Set("Content-Type", "application/json")
		w.Write(rep.Parts[0])
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AZURE_OPENAI_ENDPOINT", srv.URL)
	t.Setenv("AZURE_OPENAI_DEPLOYMENT", "")
	t.Setenv("AZURE_OPENAI_API_VERSION", "2025-04-01-preview")
	t.Setenv("AZURE_OPENAI_API_KEY", "env-key")

	hello := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}
	aad, err := azure.New(azure.Config{Model: "gpt-4o", TokenSource: func(context.Context) (string, error) { return "eyJ0eXAi", nil }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aad.Invoke(context.Background(), hello); err != nil {
		t.Fatal(err)
	}
	keyed, err := azure.New(azure.Config{Model: "gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keyed.Invoke(context.Background(), hello); err != nil {
		t.Fatal(err)
	}
	if keyed.Info() != (model.Info{ID: "gpt-4o", Name: "AzureOpenAI", Provider: "Azure"}) {
		t.Errorf("info %+v", keyed.Info())
	}
	mu.Lock()
	defer mu.Unlock()
	a, k := seen[0], seen[1]
	if a.Header.Get("Authorization") != "Bearer eyJ0eXAi" || a.Header.Get("api-key") != "" {
		t.Errorf("Entra request: Authorization %q api-key %q (the environment key must not ride along)", a.Header.Get("Authorization"), a.Header.Get("api-key"))
	}
	if k.Header.Get("api-key") != "env-key" || k.URL.Path != "/openai/deployments/gpt-4o/chat/completions" || k.URL.RawQuery != "api-version=2025-04-01-preview" {
		t.Errorf("keyed request %s?%s api-key %q", k.URL.Path, k.URL.RawQuery, k.Header.Get("api-key"))
	}
	t.Setenv("AZURE_OPENAI_API_KEY", "")
	if _, err := azure.New(azure.Config{Model: "gpt-4o"}); err == nil {
		t.Error("no credentials accepted")
	}
	t.Setenv("AZURE_OPENAI_ENDPOINT", "")
	if _, err := azure.New(azure.Config{Model: "gpt-4o", APIKey: "k"}); err == nil {
		t.Error("no endpoint accepted")
	}
}
