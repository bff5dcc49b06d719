package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/mcp/mcptool"
	"github.com/agentryhq/agentry/model/modeltest"
)

// Some servers take their API key in the URL's query. The transport's
// errors quote the URL, and a toolkit's error ends in the run's error, the
// logs and the API's answer: the values are written *** (as net/http
// writes a URL's password), the keys kept.
func TestToolkit_URLQueryValuesAreNotInErrors(t *testing.T) {
	addr := modeltest.RefusedAddr(t) // nothing listens there: connecting fails
	k := newKit(t, mcptool.Config{URL: "http://" + addr + "/mcp?api_key=SECRET1&team=SECRET2&flag"})
	_, err := k.Tools(context.Background())
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

// A stdio server was given this process's whole environment (env: added
// to it): every provider key, DSN and JWT key of `agentry serve` went to
// servers often fetched by npx or uvx at start. It now gets a few
// variables (PATH, HOME, …) and its env; inherit_env gives it everything.
func TestStdio_ServerGetsAMinimalEnvironment(t *testing.T) {
	t.Setenv("AGENTRY_TEST_MCP_SECRET", "hunter2")
	getenv := func(k *mcptool.Toolkit, name string) string {
		t.Helper()
		tools, err := k.Tools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out, err := find(t, tools, "getenv").Call(context.Background(), json.RawMessage(`{"text":"`+name+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	k := newKit(t, stdioConfig("MCPTOOL_ENV_TOOL", "1", "GIVEN_TO_IT", "yes"))
	if got := getenv(k, "AGENTRY_TEST_MCP_SECRET"); got != `false ""` {
		t.Errorf("the server read this process's secret: %s", got)
	}
	if got := getenv(k, "GIVEN_TO_IT"); got != `true "yes"` {
		t.Errorf("the server's own env: %s", got)
	}
	if got := getenv(k, "PATH"); got != fmt.Sprintf("true %q", os.Getenv("PATH")) {
		t.Errorf("PATH: %s", got)
	}
	cfg := stdioConfig("MCPTOOL_ENV_TOOL", "1")
	cfg.InheritEnv = true
	if got := getenv(newKit(t, cfg), "AGENTRY_TEST_MCP_SECRET"); got != `true "hunter2"` {
		t.Errorf("inherit_env: the server did not get this process's environment: %s", got)
	}
}

// Settings of a stdio server given to a URL server would be accepted and
// do nothing.
func TestNew_StdioSettingsOnAURLServerAreRefused(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]mcptool.Config{
		"inherit_env": {URL: "http://127.0.0.1:1/mcp", InheritEnv: true},
		"env":         {URL: "http://127.0.0.1:1/mcp", Env: map[string]string{"K": "v"}},
		"args":        {URL: "http://127.0.0.1:1/mcp", Args: []string{"-x"}},
		"dir":         {URL: "http://127.0.0.1:1/mcp", Dir: "/tmp"},
	} {
		if _, err := mcptool.New(cfg); !errors.Is(err, mcptool.ErrConfig) {
			t.Errorf("%s on a url server: %v, want ErrConfig", name, err)
		}
	}
}
