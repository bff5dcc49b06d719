package loadgen

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzNormalized: no BaseURL or AgentID panics; an accepted pair gives a
// runs URL on a loopback host whose path ends in /agents/{AgentID}/runs
// with the id as one segment, and the report's form of it shows no
// password.
func FuzzNormalized(f *testing.F) {
	for _, s := range [][2]string{{"http://127.0.0.1:7777", "echo"}, {"http://localhost/os/", "a/b"}, {"https://[::1]:1", "50%"},
		{"http://u:p@127.0.0.1", ".."}, {"http://127.0.0.1@example.com", "x"}, {"http://127.0.0.1/%zz", "x"}, {"http://127.0.0.1?q#f", "a?b#c"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, base, id string) {
		_, runs, err := Config{BaseURL: base, AgentID: id}.normalized()
		if err != nil {
			return
		}
		u, err := url.Parse(runs)
		if err != nil {
			t.Fatalf("(%q, %q): runs URL %q does not parse: %v", base, id, runs, err)
		}
		if !IsLoopbackHost(u.Hostname()) {
			t.Fatalf("(%q, %q): runs URL %q is not on loopback", base, id, runs)
		}
		segs := strings.Split(u.EscapedPath(), "/")
		if len(segs) < 3 || segs[len(segs)-1] != "runs" || segs[len(segs)-3] != "agents" {
			t.Fatalf("(%q, %q): runs URL %q does not end in /agents/ID/runs", base, id, runs)
		}
		if got, err := url.PathUnescape(segs[len(segs)-2]); err != nil || got != id {
			t.Fatalf("(%q, %q): runs URL %q names agent %q (%v)", base, id, runs, got, err)
		}
		shown, err := url.Parse(shownURL(runs))
		if err != nil {
			t.Fatalf("(%q, %q): report URL %q does not parse: %v", base, id, shownURL(runs), err)
		}
		if p, ok := shown.User.Password(); ok && p != "xxxxx" {
			t.Fatalf("(%q, %q): report URL %q shows the password", base, id, shownURL(runs))
		}
	})
}
