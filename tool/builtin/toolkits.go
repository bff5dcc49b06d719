package builtin

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/tool/files"
	"github.com/agentryhq/agentry/tool/httpreq"
	"github.com/agentryhq/agentry/tool/netguard"
	"github.com/agentryhq/agentry/tool/shell"
	"github.com/agentryhq/agentry/tool/sqltools"
	"github.com/agentryhq/agentry/tool/webfetch"
	"github.com/agentryhq/agentry/tool/websearch"
)

// network is the guard's policy, shared by the tools that fetch URLs.
type network struct {
	AllowNetworks     []string `json:"allow_networks"`
	AllowPrivateHosts []string `json:"allow_private_hosts"`
	Ports             []uint16 `json:"ports"`
}

func (n network) config() netguard.Config {
	return netguard.Config{AllowNetworks: n.AllowNetworks, AllowHosts: n.AllowPrivateHosts, Ports: n.Ports}
}

type webSearchOptions struct {
	selection
	network
	Backend         string   `json:"backend"`
	BaseURL         string   `json:"base_url"`
	APIKey          string   `json:"api_key"`
	Modifier        string   `json:"modifier"`
	FixedMaxResults int      `json:"fixed_max_results"`
	Region          string   `json:"region"`
	Timelimit       string   `json:"timelimit"`
	Timeout         Duration `json:"timeout"`
}

// apiKeyEnv is where each keyed backend finds its key when api_key is unset
// (keys belong in the environment, not in config files).
var apiKeyEnv = map[string]string{"brave": "BRAVE_API_KEY", "tavily": "TAVILY_API_KEY"}

var webSearch = register(true, func(name string, o *webSearchOptions) error {
	switch o.Backend {
	case "":
		o.Backend = "duckduckgo"
	case "duckduckgo", "searxng", "brave", "tavily":
	default:
		return fmt.Errorf("tool %s: backend %q: use duckduckgo, searxng, brave or tavily", name, o.Backend)
	}
	if apiKeyEnv[o.Backend] == "" && o.APIKey != "" {
		return fmt.Errorf("tool %s: backend %s takes no api_key (brave and tavily do)", name, o.Backend)
	}
	if env := apiKeyEnv[o.Backend]; env != "" && o.APIKey == "" {
		o.APIKey = os.Getenv(env)
		if o.APIKey == "" {
			return fmt.Errorf("tool %s: backend %s needs an API key: set %s", name, o.Backend, env)
		}
	}
	if o.Backend == "searxng" && o.BaseURL == "" {
		return fmt.Errorf("tool %s: backend searxng needs base_url (the instance's URL)", name)
	}
	return nil
}, func(o webSearchOptions) (tool.Toolkit, error) {
	g, err := netguard.New(o.network.config())
	if err != nil {
		return tool.Toolkit{}, err
	}
	if o.BaseURL != "" {
		// Checked here, once, rather than failing every search.
		u, err := url.Parse(o.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return tool.Toolkit{}, fmt.Errorf("base_url %q: write the service's http or https URL, e.g. https://searx.example.org", o.BaseURL)
		}
		if err := g.CheckURL(u); err != nil {
			return tool.Toolkit{}, fmt.Errorf("base_url: %w", err)
		}
	}
	timeout := time.Duration(o.Timeout)
	if timeout <= 0 {
		timeout = websearch.DefaultTimeout
	}
	client := g.Client(timeout)
	var b websearch.Backend
	switch o.Backend {
	case "searxng":
		b = websearch.SearXNG{BaseURL: o.BaseURL, Client: client}
	case "brave":
		b = websearch.Brave{APIKey: o.APIKey, BaseURL: o.BaseURL, Client: client}
	case "tavily":
		b = websearch.Tavily{APIKey: o.APIKey, BaseURL: o.BaseURL, Client: client}
	default:
		b = websearch.DuckDuckGo{BaseURL: o.BaseURL, Client: client}
	}
	return websearch.New(websearch.Config{Backend: b, Modifier: o.Modifier, FixedMaxResults: o.FixedMaxResults,
		Region: o.Region, TimeLimit: o.Timelimit, Timeout: timeout})
})

type webFetchOptions struct {
	selection
	network
	MaxBytes      int64    `json:"max_bytes"`
	MaxOutput     int      `json:"max_output"`
	Timeout       Duration `json:"timeout"`
	RespectRobots bool     `json:"respect_robots"`
	UserAgent     string   `json:"user_agent"`
}

var webFetch = register(true, nil, func(o webFetchOptions) (tool.Toolkit, error) {
	return webfetch.New(webfetch.Config{Network: o.network.config(), MaxBytes: o.MaxBytes, MaxOutput: o.MaxOutput,
		Timeout: time.Duration(o.Timeout), RespectRobots: o.RespectRobots, UserAgent: o.UserAgent})
})

type sqlOptions struct {
	selection
	DSN        string   `json:"dsn"`
	AllowWrite []string `json:"allow_write"`
	Schema     string   `json:"schema"`
	MaxRows    int      `json:"max_rows"`
	MaxOutput  int      `json:"max_output"`
	Timeout    Duration `json:"timeout"`
	// RefusePrivileged: calls fail while the database user can reach the
	// server's files or other sessions (sqltools.Config.RefusePrivileged).
	RefusePrivileged bool `json:"refuse_privileged"`
}

var sqlTools = register(false, func(name string, o *sqlOptions) error {
	if o.DSN == "" {
		return fmt.Errorf("tool %s: option dsn is required (a SQLite file path, postgres://… or mysql://…)", name)
	}
	expanded, err := expandEnv(name, "dsn", o.DSN, os.LookupEnv)
	if err != nil {
		return err
	}
	o.DSN = expanded
	_, err = sqltools.Dialect(o.DSN)
	return err
}, func(o sqlOptions) (tool.Toolkit, error) {
	k, err := sqltools.New(sqltools.Config{DSN: o.DSN, AllowWrite: o.AllowWrite, Schema: o.Schema,
		MaxRows: o.MaxRows, MaxOutput: o.MaxOutput, Timeout: time.Duration(o.Timeout), RefusePrivileged: o.RefusePrivileged})
	if err != nil {
		return tool.Toolkit{}, err
	}
	return k.Toolkit()
})

type fileOptions struct {
	selection
	BaseDir       string `json:"base_dir"`
	MaxReadBytes  int64  `json:"max_read_bytes"`
	MaxOutput     int    `json:"max_output"`
	MaxWriteBytes int    `json:"max_write_bytes"`
	MaxEntries    int    `json:"max_entries"`
	// ExcludePatterns: absent means files.DefaultExcludePatterns, [] none.
	ExcludePatterns []string `json:"exclude_patterns"`
}

var fileTools = register(false, func(name string, o *fileOptions) error {
	if o.BaseDir == "" {
		return fmt.Errorf("tool %s: option base_dir is required (the directory the agent may use)", name)
	}
	return nil
}, func(o fileOptions) (tool.Toolkit, error) {
	k, err := files.New(files.Config{Root: o.BaseDir, MaxReadBytes: o.MaxReadBytes, MaxOutput: o.MaxOutput,
		MaxWriteBytes: o.MaxWriteBytes, MaxEntries: o.MaxEntries, ExcludePatterns: o.ExcludePatterns})
	if err != nil {
		return tool.Toolkit{}, err
	}
	return k.Toolkit()
})

type shellOptions struct {
	selection
	AllowedCommands []string `json:"allowed_commands"`
	BaseDir         string   `json:"base_dir"`
	Env             []string `json:"env"`
	Timeout         Duration `json:"timeout"`
	MaxOutput       int      `json:"max_output"`
}

var shellTools = register(true, nil, func(o shellOptions) (tool.Toolkit, error) {
	return shell.New(shell.Config{AllowedCommands: o.AllowedCommands, Dir: o.BaseDir, Env: o.Env,
		Timeout: time.Duration(o.Timeout), MaxOutput: o.MaxOutput})
})

type httpOptions struct {
	selection
	AllowedHosts     []string          `json:"allowed_hosts"`
	Methods          []string          `json:"methods"`
	Headers          map[string]string `json:"headers"`
	HeadersOverHTTP  bool              `json:"headers_over_http"`
	AllowNetworks    []string          `json:"allow_networks"`
	Ports            []uint16          `json:"ports"`
	Timeout          Duration          `json:"timeout"`
	MaxRequestBytes  int               `json:"max_request_bytes"`
	MaxResponseBytes int64             `json:"max_response_bytes"`
}

var httpRequest = register(true, func(name string, o *httpOptions) error {
	var errs []error
	for k, v := range o.Headers {
		val, err := expandEnv(name, "headers."+k, v, os.LookupEnv)
		errs = append(errs, err)
		o.Headers[k] = val
	}
	return errors.Join(errs...)
}, func(o httpOptions) (tool.Toolkit, error) {
	return httpreq.New(httpreq.Config{AllowedHosts: o.AllowedHosts, Methods: o.Methods, Headers: o.Headers, HeadersOverHTTP: o.HeadersOverHTTP,
		Network: netguard.Config{AllowNetworks: o.AllowNetworks, Ports: o.Ports}, Timeout: time.Duration(o.Timeout),
		MaxRequestBytes: o.MaxRequestBytes, MaxResponseBytes: o.MaxResponseBytes})
})
