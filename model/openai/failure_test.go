package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
	"github.com/agentryhq/agentry/model/openai"
)

// A call cancelled while its bearer token is on its way (an Azure Entra ID
// token fetched over the network) ends with the context's error: it is the
// caller's doing, not a credential the provider refused.
func TestTokenSource_CancelledCallEndsWithTheContextsError(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{body: completion})
	started := make(chan struct{}, 2)
	m, err := openai.New(openai.Config{BaseURL: f.URL, Model: "gpt-4o", ProviderName: "Azure",
		TokenSource: func(ctx context.Context) (string, error) {
			started <- struct{}{}
			<-ctx.Done()
			return "", errors.New("fetching token: " + ctx.Err().Error())
		}})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}
	for name, call := range map[string]func(context.Context) error{
		"invoke": func(ctx context.Context) error { _, err := m.Invoke(ctx, req); return err },
		"stream": func(ctx context.Context) error {
			var last error
			for _, err := range m.Stream(ctx, req) {
				last = err
			}
			return last
		},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		err := call(ctx)
		cancel()
		if !errors.Is(err, context.Canceled) || errors.Is(err, model.ErrAuth) {
			t.Errorf("%s: err = %v, want context.Canceled and not ErrAuth", name, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("server got %d requests", n)
	}
}

// A 200 answer that is not a completion (a gateway's page echoing the
// request's headers) is quoted in the error without the credentials sent.
func TestUndecodableAnswer_QuoteCarriesNoCredentials(t *testing.T) {
	t.Parallel()
	const key, token = "sk-proj-secret-key-123", "eyJ-token-secret-789"
	for _, ct := range []string{"text/html", "text/event-stream"} {
		for secret, cfg := range map[string]openai.Config{
			key:   {APIKey: key},
			token: {TokenSource: func(context.Context) (string, error) { return token, nil }},
		} {
			t.Run(ct+"/"+secret, func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.ReadAll(r.Body)
					w.Header().Set("Content-Type", ct)
					page := "<p>Authorization: Bearer " + secret + "</p>"
					if ct == "text/event-stream" {
						page = "data: " + page + "\n\n"
					}
					io.WriteString(w, page)
				}))
				t.Cleanup(srv.Close)
				cfg.BaseURL, cfg.Model = srv.URL, "gpt-4o-mini"
				m, err := openai.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				modeltest.FailsBothWays(t, m, model.ErrMalformedResponse)
			})
		}
	}
}

// A provider's error message, however long, is cut in the error.
func TestHTTPError_LongMessageIsCut(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{status: 400, body: `{"error":{"message":"` + strings.Repeat("bad ", 10000) + `","type":"invalid_request_error"}}`})
	_, err := newModel(t, f).Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}})
	if !errors.Is(err, model.ErrBadRequest) || len(err.Error()) > 1024 {
		t.Errorf("err of %d bytes, want ErrBadRequest cut to about %d: %.200v", len(err.Error()), 512, err)
	}
}

// An error body that is not JSON (a proxy's page) is quoted cut without
// splitting a rune: the error goes into logs and the stored run as UTF-8.
func TestHTTPError_PageIsCutOnARuneBoundary(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{status: 502, header: map[string]string{"Content-Type": "text/html"}, body: "x" + strings.Repeat("é", 400)})
	_, err := newModel(t, f).Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}})
	if !errors.Is(err, model.ErrServer) || !utf8.ValidString(err.Error()) || len(err.Error()) > 1024 {
		t.Errorf("err = %q, want ErrServer, valid UTF-8, cut", err)
	}
}
