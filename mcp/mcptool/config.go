package mcptool

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultTimeout        = 60 * time.Second
	DefaultConnectTimeout = 30 * time.Second
	// DefaultMaxOutputBytes caps what one call returns to the model.
	DefaultMaxOutputBytes = 64 << 10
	// DefaultMaxSchemaBytes refuses tools whose parameter schema is larger.
	DefaultMaxSchemaBytes = 64 << 10
	// MaxSchemaDepth refuses schemas nested deeper than this.
	MaxSchemaDepth = 32
)

// Errors, usable with errors.Is.
var (
	// ErrConfig: the Config cannot work (both or neither of Command and URL, …).
	ErrConfig = errors.New("mcptool: invalid configuration")
	// ErrUnavailable: the server cannot be reached, exited or closed the
	// connection. Calls fail with it instead of hanging.
	ErrUnavailable = errors.New("mcp server unavailable")
	// ErrBadSchema: a tool's input schema is too large, too deep, recursive
	// or not a JSON Schema object; exclude the tool or fix the server.
	ErrBadSchema = errors.New("unusable tool schema")
	// ErrToolFailed: the server answered the call with an error result or a
	// JSON-RPC error (the connection is kept).
	ErrToolFailed = errors.New("mcp tool failed")
)

// Config describes one MCP server. Exactly one of Command and URL is set.
type Config struct {
	// Name identifies the server in errors and names its resource tool
	// (<name>_read_resource); default: the command's base name or the URL's
	// host.
	Name string

	// Command starts a stdio server; Args, Env and Dir go with it. The
	// server's environment is Env over a few variables of this process
	// (HOME, LOGNAME, PATH, SHELL, TERM, USER, TMPDIR, LANG, LC_ALL and
	// the proxy variables), not this process's whole environment, which
	// holds its secrets (provider keys, DSNs, JWT keys): a server that
	// needs one is given it in Env. InheritEnv gives it the whole
	// environment (then Env), as before 2026-12-07.
	Command    string
	Args       []string
	Env        map[string]string
	Dir        string
	InheritEnv bool

	// URL is a streamable HTTP endpoint (the values of its query, where
	// some servers take a key, are written *** in errors); Headers are sent
	// with every request to the URL's scheme and host (a redirect elsewhere
	// gets none), BearerToken as "Authorization: Bearer …".
	URL         string
	Headers     map[string]string
	BearerToken string
	// HTTPClient is used for URL; nil means a client without timeout (calls
	// are bounded by Timeout). A JSON answer larger than 16 MiB (the SDK's
	// bound on one SSE event or stdio message) fails the connection.
	HTTPClient *http.Client

	// Include, when not empty, keeps only these tools; Exclude drops tools.
	// Naming a tool the server does not have is an error.
	Include []string
	Exclude []string
	// Prefix is prepended to the tool names the model sees (servers whose
	// tool names collide): up to 32 letters, digits, '_' or '-'. A server's
	// tool name that model providers would refuse (a '.', more than 64
	// characters with the prefix) is given to the model with '_' for the
	// other characters, cut to 64 with a hash of the server's name when
	// too long or when it would equal another tool's; Include, Exclude and
	// the calls use the server's names.
	Prefix string

	// Timeout bounds one call (default DefaultTimeout); ConnectTimeout
	// bounds starting and initializing (default DefaultConnectTimeout).
	Timeout        time.Duration
	ConnectTimeout time.Duration
	// MaxOutputBytes caps a call's text (default DefaultMaxOutputBytes);
	// MaxSchemaBytes a tool's input schema (default DefaultMaxSchemaBytes).
	MaxOutputBytes int
	MaxSchemaBytes int

	Logger *slog.Logger
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// maxPrefix leaves room for the tool's own name within maxModelName.
const maxPrefix = 32

// withDefaults validates c and fills its defaults.
func (c Config) withDefaults() (Config, error) {
	switch {
	case c.Command == "" && c.URL == "":
		return c, fmt.Errorf("%w: give a command (stdio server) or a url (streamable HTTP server)", ErrConfig)
	case c.Command != "" && c.URL != "":
		return c, fmt.Errorf("%w: give either a command or a url, not both", ErrConfig)
	}
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, fmt.Errorf("%w: url %q: use http(s)://host/path", ErrConfig, c.URL)
		}
		if c.Name == "" {
			c.Name = u.Hostname()
		}
		if len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != "" || c.InheritEnv {
			return c, fmt.Errorf("%w: args, env, dir and inherit_env apply to command (stdio) servers only", ErrConfig)
		}
	} else if len(c.Headers) > 0 || c.BearerToken != "" {
		return c, fmt.Errorf("%w: headers and bearer_token apply to url servers only", ErrConfig)
	}
	if c.Command != "" && c.Name == "" {
		c.Name = strings.TrimSuffix(filepath.Base(c.Command), filepath.Ext(c.Command))
	}
	if !providerSafe(c.Prefix) || len(c.Prefix) > maxPrefix {
		return c, fmt.Errorf("%w: prefix %q: use up to %d letters, digits, '_' or '-' (model providers refuse other characters in a tool name)", ErrConfig, c.Prefix, maxPrefix)
	}
	c.Name = strings.Trim(unsafeName.ReplaceAllString(c.Name, "_"), "_")
	if c.Name == "" {
		c.Name = "mcp"
	}
	if c.Timeout < 0 || c.ConnectTimeout < 0 || c.MaxOutputBytes < 0 || c.MaxSchemaBytes < 0 {
		return c, fmt.Errorf("%w: timeouts and sizes must not be negative", ErrConfig)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.MaxSchemaBytes == 0 {
		c.MaxSchemaBytes = DefaultMaxSchemaBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
