package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/openai"
)

// DefaultAPIVersion is the api-version sent when none is configured (Agno's default).
const DefaultAPIVersion = "2024-10-21"

// Config configures an Azure OpenAI model. Empty fields are read from the
// environment variables Agno uses.
type Config struct {
	// Model is the model id reported in runs, e.g. "gpt-4o".
	Model string
	// Endpoint is the resource URL, e.g. https://my-resource.openai.azure.com
	// (AZURE_OPENAI_ENDPOINT).
	Endpoint string
	// Deployment is the deployment name (AZURE_OPENAI_DEPLOYMENT); default Model.
	Deployment string
	// APIVersion is the api-version query parameter (AZURE_OPENAI_API_VERSION,
	// default DefaultAPIVersion).
	APIVersion string
	// APIKey is sent as the api-key header (AZURE_OPENAI_API_KEY).
	APIKey string
	// ADToken is a static Entra ID (AAD) access token; TokenSource fetches a
	// fresh one per request (e.g. from azidentity) and wins over ADToken. Either
	// replaces the api-key.
	ADToken     string
	TokenSource func(ctx context.Context) (string, error)
	HTTPClient  *http.Client
	// Params are sent with every call; the same as openai.Supported.
	Params model.Params
}

// New returns a Chat Completions model on an Azure OpenAI deployment.
func New(cfg Config) (*openai.Model, error) {
	env := func(v *string, name string) {
		if *v == "" {
			*v = os.Getenv(name)
		}
	}
	env(&cfg.Endpoint, "AZURE_OPENAI_ENDPOINT")
	env(&cfg.Deployment, "AZURE_OPENAI_DEPLOYMENT")
	env(&cfg.APIVersion, "AZURE_OPENAI_API_VERSION")
	if cfg.TokenSource == nil && cfg.ADToken == "" {
		env(&cfg.APIKey, "AZURE_OPENAI_API_KEY")
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("azure: Config.Model is required (e.g. \"gpt-4o\")")
	}
	if cfg.Endpoint == "" {
		return nil, errors.New("azure: no endpoint: set Config.Endpoint or AZURE_OPENAI_ENDPOINT (https://<resource>.openai.azure.com)")
	}
	if u, err := url.Parse(cfg.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.RawQuery != "" || u.Fragment != "" || strings.Contains(u.Path, "/deployments/") {
		return nil, fmt.Errorf("azure: endpoint %s is not a resource URL: set Config.Endpoint or AZURE_OPENAI_ENDPOINT to https://<resource>.openai.azure.com (the deployment and api-version are set apart)", shownEndpoint(u, err))
	}
	if cfg.Deployment == "" {
		cfg.Deployment = cfg.Model
	}
	if cfg.APIVersion == "" {
		cfg.APIVersion = DefaultAPIVersion
	}
	tokens := cfg.TokenSource
	if tokens == nil && cfg.ADToken != "" {
		tok := cfg.ADToken
		tokens = func(context.Context) (string, error) { return tok, nil }
	}
	headers := map[string]string{}
	switch {
	case tokens != nil:
	case cfg.APIKey != "":
		headers["api-key"] = cfg.APIKey
	default:
		return nil, fmt.Errorf("azure: %w: set Config.APIKey (or AZURE_OPENAI_API_KEY), ADToken or TokenSource", model.ErrNoAPIKey)
	}
	base := strings.TrimRight(cfg.Endpoint, "/") + "/openai/deployments/" + url.PathEscape(cfg.Deployment)
	return openai.New(openai.Config{
		BaseURL: base, Model: cfg.Model, HTTPClient: cfg.HTTPClient, Headers: headers,
		QueryParams: map[string]string{"api-version": cfg.APIVersion}, TokenSource: tokens,
		ProviderName: "Azure", Name: "AzureOpenAI", Params: cfg.Params,
	})
}

// shownEndpoint quotes an endpoint for a message without what may be a
// secret in it: a password (as xxxxx), a query or fragment (as …). One that
// does not parse is not quoted: url.Parse ends a host at a '/' in a
// password, so no piece of it can be told safe.
func shownEndpoint(u *url.URL, err error) string {
	if err != nil {
		return "(unparsable)"
	}
	c := *u
	c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = "", false, "", ""
	shown := c.Redacted()
	if u.RawQuery != "" || u.ForceQuery {
		shown += "?…"
	}
	if u.Fragment != "" {
		shown += "#…"
	}
	return strconv.Quote(shown)
}
