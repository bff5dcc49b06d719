package responses

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
)

// A 200 answer that is not a response (a gateway's page echoing the
// request's headers) is quoted in the error without the credentials sent.
func TestUndecodableAnswer_QuoteCarriesNoCredentials(t *testing.T) {
	t.Parallel()
	const key = "sk-proj-secret-key-123"
	for i, page := range []string{
		"<p>Authorization: Bearer " + key + "</p>",
		"data: <p>Authorization: Bearer " + key + "</p>\n\n",
		`{"output":[["Authorization: Bearer ` + key + `"]]}`,
	} {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, page)
			}))
			t.Cleanup(srv.Close)
			m, err := New(Config{APIKey: key, BaseURL: srv.URL, Model: "o4-mini"})
			if err != nil {
				t.Fatal(err)
			}
			modeltest.FailsBothWays(t, m, model.ErrMalformedResponse)
		})
	}
}

// An error body that is not JSON (a proxy's page) is quoted cut without
// splitting a rune: the error goes into logs and the stored run as UTF-8.
func TestHTTPError_PageIsCutOnARuneBoundary(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "x"+strings.Repeat("é", 400))
	}))
	t.Cleanup(srv.Close)
	m, err := New(Config{APIKey: "sk", BaseURL: srv.URL, Model: "o4-mini"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}})
	if !errors.Is(err, model.ErrServer) || !utf8.ValidString(err.Error()) || len(err.Error()) > 1024 {
		t.Errorf("err = %q, want ErrServer, valid UTF-8, cut", err)
	}
}
