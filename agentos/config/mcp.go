package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/mcp/mcpserver"
	"github.com/agentryhq/agentry/mcp/mcptool"
)

// MCPClient is one MCP server an agent uses: {command: …} (stdio) or
// {url: …} (streamable HTTP). Connections open on the agent's first run and
// close when the server stops.
type MCPClient struct {
	// Name names the server in errors and its resource tool; default the
	// command's base name or the URL's host, with "_2", "_3", … for a later
	// unnamed server of the same agent whose default another already has.
	Name string `yaml:"name"`
	// Command, Args and Env start a stdio server. Its environment is Env
	// over HOME, PATH, USER, the locale, TMPDIR and the proxy variables of
	// the server's, not the server's whole environment (its secrets): pass
	// a variable by name, env: {GITHUB_TOKEN: ${GITHUB_TOKEN}}, or set
	// inherit_env: true for the whole environment (then Env).
	Command    string            `yaml:"command"`
	Args       []string          `yaml:"args"`
	Env        map[string]string `yaml:"env"`
	InheritEnv bool              `yaml:"inherit_env"`
	// URL, Headers and BearerToken reach a streamable HTTP server.
	URL         string            `yaml:"url"`
	Headers     map[string]string `yaml:"headers"`
	BearerToken string            `yaml:"bearer_token"`
	// IncludeTools, ExcludeTools and ToolNamePrefix select and rename tools.
	IncludeTools   []string `yaml:"include_tools"`
	ExcludeTools   []string `yaml:"exclude_tools"`
	ToolNamePrefix string   `yaml:"tool_name_prefix"`
	// Timeout bounds one call (default 60s); MaxOutputBytes caps its result
	// (default 64KiB).
	Timeout        time.Duration `yaml:"timeout"`
	MaxOutputBytes ByteSize      `yaml:"max_output_bytes"`
}

// toolkit builds the client (no I/O). ${VAR} in bearer_token and in the
// values of headers and env is replaced from the environment; an unset
// variable is an error, so a credential does not silently go out empty.
func (m MCPClient) toolkit() (*mcptool.Toolkit, error) {
	token, err := expandEnv("bearer_token", m.BearerToken)
	if err != nil {
		return nil, err
	}
	expandMap := func(what string, in map[string]string) (map[string]string, error) {
		if in == nil {
			return nil, nil
		}
		out := make(map[string]string, len(in))
		for k, v := range in {
			if out[k], err = expandEnv(what+"."+k, v); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	headers, err := expandMap("headers", m.Headers)
	if err != nil {
		return nil, err
	}
	env, err := expandMap("env", m.Env)
	if err != nil {
		return nil, err
	}
	return mcptool.New(mcptool.Config{Name: m.Name, Command: m.Command, Args: m.Args, Env: env, InheritEnv: m.InheritEnv, URL: m.URL, Headers: headers,
		BearerToken: token, Include: m.IncludeTools, Exclude: m.ExcludeTools, Prefix: m.ToolNamePrefix,
		Timeout: m.Timeout, MaxOutputBytes: int(m.MaxOutputBytes)})
}

func expandEnv(key, s string) (string, error) {
	var missing []string
	out := os.Expand(s, func(v string) string {
		val, ok := os.LookupEnv(v)
		if !ok {
			missing = append(missing, v)
		}
		return val
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%s refers to unset environment variable %s", key, strings.Join(missing, ", "))
	}
	return out, nil
}

// mcpProviders builds an agent's MCP toolkits.
func mcpProviders(where string, decl []MCPClient) ([]agent.ToolProvider, error) {
	var out []agent.ToolProvider
	taken := map[string]bool{}
	for i, m := range decl {
		k, err := m.toolkit()
		if err == nil && m.Name == "" && taken[k.Name()] {
			// An unnamed server whose default name (its command's or
			// host's) another server of the agent has gets the next free
			// "<name>_<n>": the two <name>_read_resource tools would
			// clash and refuse every run of the agent.
			base := k.Name()
			for n := 2; taken[m.Name] || m.Name == ""; n++ {
				m.Name = base + "_" + strconv.Itoa(n)
			}
			k, err = m.toolkit()
		}
		if err != nil {
			return nil, fmt.Errorf("config: %s: mcp[%d]: %w", where, i, err)
		}
		taken[k.Name()] = true
		out = append(out, k)
	}
	return out, nil
}

// options are the server options without the tools (built by Options).
func (m MCPServer) options() mcpserver.Options {
	return mcpserver.Options{Stateless: m.Stateless, EnableBuiltinTools: m.EnableBuiltinTools, IncludeTags: m.IncludeTags,
		ExcludeTags: m.ExcludeTags, ResultMode: m.ResultMode, MaxResultBytes: int(m.MaxResultBytes)}
}

// Options turns the declaration into the MCP server's options, building its
// tools.
func (m MCPServer) Options() (mcpserver.Options, error) {
	o := m.options()
	var err error
	o.Tools, err = builtinTools("mcp_server", m.Tools)
	return o, err
}
