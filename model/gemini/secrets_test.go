package gemini

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
)

// An error body that echoes the request's credentials (a gateway's debug
// page, a proxy quoting the header it refused) does not carry the API key or
// the Vertex access token into the error, which ends up in logs and in the
// stored run.
func TestHTTPErrors_NeverCarryCredentials(t *testing.T) {
	t.Parallel()
	const (
		key   = "AIzaSyTEST-secret-key-0123456789"
		token = "ya29.TEST-secret-access-token"
	)
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusBadRequest)
		// A proxy page quoting the header, or Google's envelope quoting the key.
		if strings.Contains(r.URL.Path, "/projects/") {
			io.WriteString(w, "<html><pre>Authorization: "+r.Header.Get("Authorization")+"</pre></html>")
			return
		}
		io.WriteString(w, `{"error":{"code":400,"message":"API key `+r.Header.Get("x-goog-api-key")+` not valid.","status":"INVALID_ARGUMENT"}}`)
	}))
	t.Cleanup(echo.Close)
	withKey, err := New(Config{Model: "gemini-2.5-flash", APIKey: key, BaseURL: echo.URL})
	if err != nil {
		t.Fatal(err)
	}
	vertex, err := New(Config{Model: "gemini-2.5-flash", Vertex: true, Project: "p", Location: "us-central1", BaseURL: echo.URL,
		TokenSource: func(context.Context) (string, error) { return token, nil }})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}
	for name, m := range map[string]*Model{"api key": withKey, "vertex token": vertex} {
		for _, streamed := range []bool{false, true} {
			var err error
			if streamed {
				for _, e := range m.Stream(context.Background(), req) {
					err = e
				}
			} else {
				_, err = m.Invoke(context.Background(), req)
			}
			if !errors.Is(err, model.ErrBadRequest) {
				t.Fatalf("%s (stream %v): err = %v, want ErrBadRequest", name, streamed, err)
			}
			if s := err.Error(); strings.Contains(s, "secret") {
				t.Errorf("%s (stream %v): error carries the credential: %s", name, streamed, s)
			}
		}
	}
}

// A gateway's own credential given as an extra header (extra_headers, e.g.
// Cloudflare AI Gateway's cf-aig-authorization) stays out of the error too,
// as it does on the anthropic, openai and responses providers.
func TestHTTPErrors_NeverCarryExtraHeaderCredentials(t *testing.T) {
	t.Parallel()
	const gateway = "Bearer gw-header-secret-456"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"code":401,"message":"gateway refused cf-aig-authorization: `+r.Header.Get("cf-aig-authorization")+`","status":"UNAUTHENTICATED"}}`)
	}))
	t.Cleanup(echo.Close)
	m, err := New(Config{Model: "gemini-2.5-flash", APIKey: "AIzaSyTEST-key-0123456789", BaseURL: echo.URL,
		Params: model.Params{ExtraHeaders: map[string]string{"cf-aig-authorization": gateway}}})
	if err != nil {
		t.Fatal(err)
	}
	modeltest.FailsBothWays(t, m, model.ErrAuth)
}
