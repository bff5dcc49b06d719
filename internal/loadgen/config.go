package loadgen

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// SessionMode says which session each run belongs to.
type SessionMode string

const (
	// SessionNew sends no session_id, so every run starts a new session (the
	// server's cheapest path: no history to load).
	SessionNew SessionMode = "new"
	// SessionPerWorker reuses one session per client: the first run of each
	// worker starts a session and later runs send its session_id (learned from
	// the run JSON or the RunStarted event), so history grows with the run.
	SessionPerWorker SessionMode = "per-worker"
)

// ParseSessionMode accepts "new" (or "") and "per-worker".
func ParseSessionMode(s string) (SessionMode, error) {
	switch SessionMode(strings.ToLower(strings.TrimSpace(s))) {
	case "", SessionNew:
		return SessionNew, nil
	case SessionPerWorker:
		return SessionPerWorker, nil
	}
	return "", fmt.Errorf("loadgen: unknown session mode %q (use %q or %q)", s, SessionNew, SessionPerWorker)
}

// Defaults and hard caps. The caps keep every run bounded in time and memory:
// each successful request keeps one or two 8-byte samples until the report.
const (
	DefaultConcurrency    = 32
	DefaultDuration       = 10 * time.Second
	DefaultMessage        = "hello"
	DefaultRequestTimeout = 30 * time.Second

	MaxConcurrency = 4096
	MaxDuration    = 30 * time.Minute
	MaxRequests    = 5_000_000
	// maxBody bounds how much of one response is read.
	maxBody = 16 << 20
)

// Config describes one load test. The zero value of every field but BaseURL
// and AgentID has a documented default.
type Config struct {
	// BaseURL is the server root, e.g. http://127.0.0.1:7777. Its host must be a
	// loopback address (127.0.0.0/8, ::1 or "localhost") unless AllowRemote.
	BaseURL string
	// AgentID is the agent to run: POST {BaseURL}/agents/{AgentID}/runs.
	AgentID string
	// Concurrency is the number of clients, each with at most one request in
	// flight; default 32, at most MaxConcurrency.
	Concurrency int
	// Duration and Requests bound the measured phase; whichever is reached first
	// stops it. Both zero means DefaultDuration. Duration is capped at
	// MaxDuration and Requests at MaxRequests, and a Duration run also stops
	// after MaxRequests requests, so no run is unbounded.
	Duration time.Duration
	Requests int
	// Warmup runs load for this long before measuring; its results are
	// discarded (connections, sessions and server caches stay warm). Capped at
	// MaxDuration.
	Warmup time.Duration
	// Stream requests stream=true and reads the SSE response.
	Stream bool
	// Message is the form's message; default "hello".
	Message string
	// SessionMode defaults to SessionNew.
	SessionMode SessionMode
	// BearerToken, when set, is sent as "Authorization: Bearer <token>".
	BearerToken string
	// RequestTimeout bounds one request including its body; default 30s.
	RequestTimeout time.Duration
	// HTTPClient replaces the built-in client (keep-alive, MaxIdleConnsPerHost
	// = Concurrency, no proxy, no redirects, dials only loopback unless
	// AllowRemote). A custom client is trusted to honour the loopback rule.
	HTTPClient *http.Client
	// AllowRemote permits a non-loopback BaseURL. Load tests here run next to
	// the server on purpose: load aimed at another address can degrade or look
	// like an attack on a host that is not ours, so it needs an explicit opt-in.
	AllowRemote bool
}

// ErrRemoteTarget is returned for a BaseURL whose host is not a loopback
// address when Config.AllowRemote is false.
var ErrRemoteTarget = errors.New("loadgen: target is not a loopback address (127.0.0.0/8, ::1, localhost); load tests only run against this machine unless AllowRemote is set")

// normalized returns cfg with defaults filled and validated, and the runs URL.
func (cfg Config) normalized() (Config, string, error) {
	if cfg.AgentID == "" {
		return cfg, "", errors.New("loadgen: AgentID is required (the agent to run)")
	}
	if cfg.AgentID == "." || cfg.AgentID == ".." {
		return cfg, "", fmt.Errorf("loadgen: AgentID %q is not an agent id", cfg.AgentID)
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return cfg, "", fmt.Errorf("loadgen: BaseURL %w", parseError(cfg.BaseURL, err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return cfg, "", fmt.Errorf("loadgen: BaseURL %q needs an http:// or https:// scheme", u.Redacted())
	}
	if u.Host == "" {
		return cfg, "", fmt.Errorf("loadgen: BaseURL %q has no host", u.Redacted())
	}
	if !cfg.AllowRemote && !IsLoopbackHost(u.Hostname()) {
		return cfg, "", fmt.Errorf("%w: %q", ErrRemoteTarget, u.Hostname())
	}
	u.RawQuery, u.Fragment = "", ""
	// JoinPath takes its elements as escaped path: the id is escaped into
	// one segment (a '%' or '/' in it is the id's, not the URL's).
	runsURL := u.JoinPath("agents", url.PathEscape(cfg.AgentID), "runs").String()

	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Concurrency < 0 || cfg.Concurrency > MaxConcurrency {
		return cfg, "", fmt.Errorf("loadgen: Concurrency %d out of range 1..%d", cfg.Concurrency, MaxConcurrency)
	}
	if cfg.Duration < 0 || cfg.Requests < 0 || cfg.Warmup < 0 {
		return cfg, "", errors.New("loadgen: Duration, Requests and Warmup must not be negative")
	}
	if cfg.Duration > MaxDuration || cfg.Warmup > MaxDuration {
		return cfg, "", fmt.Errorf("loadgen: Duration and Warmup are capped at %s", MaxDuration)
	}
	if cfg.Requests > MaxRequests {
		return cfg, "", fmt.Errorf("loadgen: Requests is capped at %d", MaxRequests)
	}
	if cfg.Duration == 0 && cfg.Requests == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Message == "" {
		cfg.Message = DefaultMessage
	}
	if cfg.SessionMode, err = ParseSessionMode(string(cfg.SessionMode)); err != nil {
		return cfg, "", err
	}
	if cfg.RequestTimeout < 0 {
		return cfg, "", errors.New("loadgen: RequestTimeout must not be negative")
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if strings.ContainsAny(cfg.BearerToken, "\r\n") {
		return cfg, "", errors.New("loadgen: BearerToken contains a line break")
	}
	return cfg, runsURL, nil
}

// parseError is url.Parse's error on s without s, which may hold a
// password; with a user part, without the parser's words either: a '/',
// '?' or '#' in a password ends the host inside it, and the error quotes
// the start of the password as a port.
func parseError(s string, err error) error {
	if strings.Contains(s, "@") {
		return errors.New("does not parse as a URL: percent-encode any '/', '?', '#', '@', ':' or '%' in the user name or password")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("does not parse as a URL: %w", err)
}

// shownURL is a URL for reports: its password, if any, as "xxxxx".
func shownURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return u.Redacted()
}
