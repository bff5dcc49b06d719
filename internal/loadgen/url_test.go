package loadgen

import (
	"encoding/json"
	"strings"
	"testing"
)

// The agent id is one path segment of the runs URL, whatever it holds:
// JoinPath read it as an escaped path, so "50%" (a bad escape) left the URL
// at BaseURL itself, ".." climbed out of /agents and "a/b" made two
// segments, and the load went to another route without a word.
func TestNormalized_AgentIDIsOnePathSegment(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]string{
		"echo":  "http://127.0.0.1:7777/os/agents/echo/runs",
		"50%":   "http://127.0.0.1:7777/os/agents/50%25/runs",
		"a/b":   "http://127.0.0.1:7777/os/agents/a%2Fb/runs",
		"a%2Fb": "http://127.0.0.1:7777/os/agents/a%252Fb/runs",
		"a b?c": "http://127.0.0.1:7777/os/agents/a%20b%3Fc/runs",
	} {
		_, runs, err := Config{BaseURL: "http://127.0.0.1:7777/os", AgentID: id}.normalized()
		if err != nil || runs != want {
			t.Errorf("AgentID %q: runs URL %q, %v; want %q", id, runs, err, want)
		}
	}
	for _, id := range []string{".", ".."} {
		if _, runs, err := (Config{BaseURL: "http://127.0.0.1:7777/os", AgentID: id}).normalized(); err == nil {
			t.Errorf("AgentID %q accepted (runs URL %q)", id, runs)
		}
	}
}

// A password in BaseURL's user part is sent (as Basic auth), never shown:
// the report's URL (terminal and JSON) and the errors about BaseURL
// repeated it.
func TestRun_BaseURLPasswordIsNotShown(t *testing.T) {
	t.Parallel()
	f := &fakeOS{}
	base := strings.Replace(newFakeOS(t, f), "http://", "http://u:hunter2@", 1)
	rep, err := Run(testCtx(t), Config{BaseURL: base, AgentID: "echo", Concurrency: 1, Requests: 2})
	if err != nil || rep.Successes != 2 {
		t.Fatalf("Run: %v (successes %d, errors %v)", err, rep.Successes, rep.Errors)
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{rep.URL, rep.String(), string(js)} {
		if strings.Contains(out, "hunter2") || !strings.Contains(out, "u:xxxxx@") {
			t.Errorf("report shows %q; want the user with the password as xxxxx", out)
		}
	}
	for _, bad := range []string{
		"ftp://u:hunter2@127.0.0.1:7777",
		"http://u:hun/ter2@127.0.0.1:7777",
		"http://u:hun%zter2@127.0.0.1:7777",
		"http://u:hunter2@10.0.0.1:7777",
	} {
		_, err := Run(t.Context(), Config{BaseURL: bad, AgentID: "echo", Requests: 1})
		if err == nil || strings.Contains(err.Error(), "hun") || strings.Contains(err.Error(), "%z") {
			t.Errorf("Run(%q) error %v; want a refusal that does not repeat the password", bad, err)
		}
	}
}
