package loadgen

import (
	"errors"
	"testing"
)

func TestIsLoopbackHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host string
		want bool
	}{
		{"127.0.0.1", true},
		{"127.45.6.7", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true},
		{"localhost", true},
		{"LocalHost", true},
		{"10.0.0.1", false},
		{"192.168.1.20", false},
		{"0.0.0.0", false},
		{"::", false},
		{"2001:db8::1", false},
		{"example.com", false},
		{"localhost.example.com", false},
		{"127.0.0.1.nip.io", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsLoopbackHost(tt.host); got != tt.want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}

func TestRun_RefusesNonLoopbackTargets(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"http://10.0.0.1:7777",
		"http://example.com",
		"https://[2001:db8::1]:443",
		"http://0.0.0.0:7777",
		"http://localhost.example.com:7777",
		"http://127.0.0.1@example.com:7777", // userinfo, not the host
	} {
		// Refused before any connection: the context is never needed.
		_, err := Run(t.Context(), Config{BaseURL: u, AgentID: "echo", Requests: 1})
		if !errors.Is(err, ErrRemoteTarget) {
			t.Errorf("Run(%s) error = %v, want ErrRemoteTarget", u, err)
		}
	}
}

func TestNormalized_AllowRemoteAcceptsOtherHosts(t *testing.T) {
	t.Parallel()
	_, runs, err := Config{BaseURL: "http://10.0.0.1:7777/os", AgentID: "echo", AllowRemote: true}.normalized()
	if err != nil || runs != "http://10.0.0.1:7777/os/agents/echo/runs" {
		t.Fatalf("normalized = %q, %v", runs, err)
	}
}

func TestClient_DialsOnlyLoopback(t *testing.T) {
	t.Parallel()
	// The dial check runs before connect(2), so no packet leaves the machine;
	// 192.0.2.0/24 is TEST-NET-1 and never routed anyway.
	c := newClient(Config{Concurrency: 1})
	resp, err := c.Get("http://192.0.2.1:9/")
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, ErrRemoteTarget) {
		t.Fatalf("Get(192.0.2.1) error = %v, want ErrRemoteTarget", err)
	}
}

func TestNormalized_ValidatesConfig(t *testing.T) {
	t.Parallel()
	base := Config{BaseURL: "http://127.0.0.1:7777", AgentID: "echo"}
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{"missing agent", func(c *Config) { c.AgentID = "" }},
		{"no scheme", func(c *Config) { c.BaseURL = "127.0.0.1:7777" }},
		{"ftp scheme", func(c *Config) { c.BaseURL = "ftp://127.0.0.1" }},
		{"no host", func(c *Config) { c.BaseURL = "http://" }},
		{"negative concurrency", func(c *Config) { c.Concurrency = -1 }},
		{"too many clients", func(c *Config) { c.Concurrency = MaxConcurrency + 1 }},
		{"negative requests", func(c *Config) { c.Requests = -5 }},
		{"requests over the cap", func(c *Config) { c.Requests = MaxRequests + 1 }},
		{"duration over the cap", func(c *Config) { c.Duration = MaxDuration + 1 }},
		{"warmup over the cap", func(c *Config) { c.Warmup = MaxDuration + 1 }},
		{"unknown session mode", func(c *Config) { c.SessionMode = "sticky" }},
		{"token with a line break", func(c *Config) { c.BearerToken = "a\r\nX-Evil: 1" }},
	}
	for _, tt := range tests {
		cfg := base
		tt.edit(&cfg)
		if _, _, err := cfg.normalized(); err == nil {
			t.Errorf("%s: normalized accepted %+v", tt.name, cfg)
		}
	}
	got, _, err := base.normalized()
	if err != nil {
		t.Fatal(err)
	}
	if got.Concurrency != DefaultConcurrency || got.Duration != DefaultDuration || got.Message != DefaultMessage ||
		got.SessionMode != SessionNew || got.RequestTimeout != DefaultRequestTimeout {
		t.Errorf("defaults not filled: %+v", got)
	}
}
