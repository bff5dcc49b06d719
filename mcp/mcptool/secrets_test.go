package mcptool_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/mcp/mcptool"
)

// Some servers take their API key in the URL's query. The transport's
// errors quote the URL, and a toolkit's error ends in the run's error, the
// logs and the API's answer: the values are written *** (as net/http
// writes a URL's password), the keys kept.
func TestToolkit_URLQueryValuesAreNotInErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now: connecting fails
	k := newKit(t, mcptool.Config{URL: "http://" + addr + "/mcp?api_key=SECRET1&team=SECRET2&flag"})
	_, err = k.Tools(context.Background())
	if !errors.Is(err, mcptool.ErrUnavailable) {
		t.Fatalf("Tools = %v, want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("the error quotes the URL's query values: %v", err)
	}
	if !strings.Contains(err.Error(), "api_key=***&team=***&flag") {
		t.Errorf("the error should still name the query's keys: %v", err)
	}
}

// A redirect to another host does not carry the bearer token or the
// configured headers: net/http drops Authorization on such a redirect, but
// the toolkit added its headers to every request its client sent,
// redirected ones included.
func TestToolkit_RedirectToAnotherHostGetsNoCredentials(t *testing.T) {
	leaked := make(chan string, 16)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key"); v != "" {
			select {
			case leaked <- v:
			default:
			}
		}
		http.Error(w, "not here", http.StatusNotFound)
	}))
	t.Cleanup(other.Close)
	_, port, err := net.SplitHostPort(other.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	target := "http://localhost:" + port + "/mcp" // another host name than 127.0.0.1
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(origin.Close)
	k := newKit(t, mcptool.Config{URL: origin.URL + "/mcp", BearerToken: "T0KEN", Headers: map[string]string{"X-Api-Key": "K3Y"}})
	if _, err := k.Tools(context.Background()); err == nil {
		t.Fatal("Tools succeeded against a redirect to a 404")
	}
	close(leaked)
	for v := range leaked {
		t.Errorf("the redirect's target got credentials: %q", v)
	}
}
