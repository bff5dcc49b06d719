package mcptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/tool"
)

// Toolkit is one MCP server's tools for an agent (an agent.ToolProvider). It
// connects on first use, reconnects after the server died, and is safe for
// concurrent use. Close ends the connection (and a stdio server's process).
type Toolkit struct {
	cfg Config
	// hideQuery writes the URL's query values (an API key some servers
	// take there) as *** in errors, as net/http hides a password.
	hideQuery *strings.Replacer

	// mu guards conn, tools and closed; it is never held across I/O, so a
	// call waits for no other call, connect or listing.
	mu     sync.Mutex
	conn   *conn
	tools  []tool.Tool
	closed bool
	// connecting and listing (one slot each) let one caller connect and one
	// list at a time; the others wait for it as long as their context lets
	// them.
	connecting chan struct{}
	listing    chan struct{}
	// stale is set by tools/list_changed: the next Tools lists again.
	stale atomic.Bool
}

// conn is one live session; dead closes when it ends.
type conn struct {
	cs     *mcp.ClientSession
	stderr *tailBuffer
	dead   chan struct{}
	why    error
}

// New validates cfg; it does no I/O.
func New(cfg Config) (*Toolkit, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	k := &Toolkit{cfg: c, connecting: make(chan struct{}, 1), listing: make(chan struct{}, 1)}
	if u, err := url.Parse(c.URL); err == nil && u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			if key, _, ok := strings.Cut(p, "="); ok {
				parts[i] = key + "=***"
			}
		}
		k.hideQuery = strings.NewReplacer(u.RawQuery, strings.Join(parts, "&"))
	}
	return k, nil
}

// errText is err's text for an error of the toolkit: the transport's
// errors quote the URL.
func (k *Toolkit) errText(err error) string {
	if k.hideQuery == nil {
		return err.Error()
	}
	return k.hideQuery.Replace(err.Error())
}

// Name is the server's name.
func (k *Toolkit) Name() string { return k.cfg.Name }

// Tools connects if needed and returns the server's tools (after Include,
// Exclude and Prefix), plus <name>_read_resource when the server has
// resources. The list is cached until the server says it changed.
func (k *Toolkit) Tools(ctx context.Context) ([]tool.Tool, error) {
	if err := k.wait(ctx, k.listing, "listing tools"); err != nil {
		return nil, err
	}
	defer func() { <-k.listing }()
	c, err := k.connected(ctx)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	cached := k.tools
	if k.conn != c || k.stale.Load() {
		cached = nil
	}
	k.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	k.stale.Store(false)
	lctx, cancel := context.WithTimeout(ctx, k.cfg.ConnectTimeout)
	defer cancel()
	listed, err := listAll(lctx, func(ctx context.Context, cursor string) ([]*mcp.Tool, string, error) {
		res, err := c.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Tools, res.NextCursor, nil
	})
	if err != nil {
		return nil, k.unavailable(c, "listing tools", err)
	}
	tools, err := k.wrap(listed)
	if err != nil {
		return nil, err
	}
	if caps := c.cs.InitializeResult().Capabilities; caps != nil && caps.Resources != nil {
		name := fitName(k.cfg.Prefix + k.cfg.Name + "_read_resource")
		if slices.ContainsFunc(tools, func(t tool.Tool) bool { return t.Definition().Name == name }) {
			// the server has a tool of that name
			name = hashed(name, "resource tool "+name)
		}
		tools = append(tools, &resourceTool{k: k, name: name})
	}
	if tools == nil {
		tools = []tool.Tool{} // listed: nil means not yet
	}
	k.mu.Lock()
	if k.conn == c {
		k.tools = tools
	}
	k.mu.Unlock()
	return tools, nil
}

// wait takes slot (connecting or listing) unless ctx ends first.
func (k *Toolkit) wait(ctx context.Context, slot chan struct{}, what string) error {
	select {
	case slot <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcp server %s: %s: %w", k.cfg.Name, what, context.Cause(ctx))
	}
}

// wrap applies Include/Exclude and checks each schema.
func (k *Toolkit) wrap(listed []*mcp.Tool) ([]tool.Tool, error) {
	have := map[string]bool{}
	for _, t := range listed {
		have[t.Name] = true
	}
	for _, list := range [][]string{k.cfg.Include, k.cfg.Exclude} {
		for _, n := range list {
			if !have[n] {
				return nil, fmt.Errorf("mcp server %s has no tool %q (include/exclude)", k.cfg.Name, n)
			}
		}
	}
	var out []tool.Tool
	var kept []string
	seen := map[string]bool{}
	for _, t := range listed {
		if (len(k.cfg.Include) > 0 && !slices.Contains(k.cfg.Include, t.Name)) || slices.Contains(k.cfg.Exclude, t.Name) {
			continue
		}
		if seen[t.Name] {
			// A call names the tool: the server cannot tell the two apart.
			k.cfg.Logger.Warn("mcp server lists a tool name twice; the first is used", "server", k.cfg.Name, "tool", t.Name)
			continue
		}
		seen[t.Name] = true
		schema, err := checkSchema(t.InputSchema, k.cfg.MaxSchemaBytes)
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: tool %q: %w (add it to exclude to use the other tools)", k.cfg.Name, t.Name, err)
		}
		out = append(out, &remoteTool{k: k, name: t.Name, def: tool.Definition{
			Description: t.Description, Parameters: schema, Timeout: k.cfg.Timeout}})
		kept = append(kept, t.Name)
	}
	for i, name := range modelNames(k.cfg.Prefix, kept) {
		out[i].(*remoteTool).def.Name = name
	}
	return out, nil
}

// Prompts lists the server's prompts (agents do not use them yet).
func (k *Toolkit) Prompts(ctx context.Context) ([]*mcp.Prompt, error) {
	c, err := k.connected(ctx)
	if err != nil {
		return nil, err
	}
	if caps := c.cs.InitializeResult().Capabilities; caps == nil || caps.Prompts == nil {
		return nil, nil
	}
	lctx, cancel := context.WithTimeout(ctx, k.cfg.ConnectTimeout)
	defer cancel()
	out, err := listAll(lctx, func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
		res, err := c.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Prompts, res.NextCursor, nil
	})
	if err != nil {
		return nil, k.unavailable(c, "listing prompts", err)
	}
	return out, nil
}

// maxListed bounds the items one listing collects: a server answering
// every page with a new cursor would be followed, and its pages held,
// until the listing's time ran out.
const maxListed = 10_000

// listAll follows a listing's cursors from the first page, refusing a
// cursor the server gave before (its listing would never end) and more
// than maxListed items, and leaving out the nulls a page may hold.
func listAll[T any](ctx context.Context, page func(ctx context.Context, cursor string) ([]*T, string, error)) ([]*T, error) {
	var out []*T
	seen := map[string]bool{}
	cursor := ""
	for {
		items, next, err := page(ctx, cursor)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if it != nil {
				out = append(out, it)
			}
		}
		if len(out) > maxListed {
			return nil, fmt.Errorf("the server lists more than %d items", maxListed)
		}
		if next == "" {
			return out, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("the server gave the cursor %.64q of a page it listed before (its listing would never end)", next)
		}
		seen[next] = true
		cursor = next
	}
}

// connected returns a live connection, connecting when there is none.
func (k *Toolkit) connected(ctx context.Context) (*conn, error) {
	if c, err := k.live(); c != nil || err != nil {
		return c, err
	}
	if err := k.wait(ctx, k.connecting, "connecting"); err != nil {
		return nil, err
	}
	defer func() { <-k.connecting }()
	// Another caller may have connected while this one waited.
	if c, err := k.live(); c != nil || err != nil {
		return c, err
	}
	c, err := k.connect(ctx)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		_ = c.cs.Close()
		return nil, k.closedErr()
	}
	if k.conn != nil {
		k.cfg.Logger.Info("mcp server reconnected", "server", k.cfg.Name)
	}
	k.conn, k.tools = c, nil
	k.mu.Unlock()
	return c, nil
}

// live returns the current connection unless it died, or the error of a
// closed toolkit; neither when a connection is needed.
func (k *Toolkit) live() (*conn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, k.closedErr()
	}
	if c := k.conn; c != nil {
		select {
		case <-c.dead:
		default:
			return c, nil
		}
	}
	return nil, nil
}

func (k *Toolkit) closedErr() error {
	return fmt.Errorf("%w: %s: the toolkit is closed", ErrUnavailable, k.cfg.Name)
}

// connect starts a session (and a stdio server's process).
func (k *Toolkit) connect(ctx context.Context) (*conn, error) {
	cctx, cancel := context.WithTimeout(ctx, k.cfg.ConnectTimeout)
	defer cancel()
	c := &conn{dead: make(chan struct{}), stderr: &tailBuffer{max: 4 << 10}}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentry", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { k.stale.Store(true) },
	})
	var transport mcp.Transport
	if k.cfg.Command != "" {
		// Not CommandContext: the process lives as long as the toolkit,
		// not the first run's context; Close ends it.
		cmd := exec.Command(k.cfg.Command, k.cfg.Args...)
		cmd.Dir = k.cfg.Dir
		cmd.Env = serverEnv(k.cfg.InheritEnv, k.cfg.Env)
		transport = &stdioTransport{cmd: cmd, stderr: c.stderr}
	} else {
		hc := k.cfg.HTTPClient
		if hc == nil {
			hc = &http.Client{}
		}
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		var rt http.RoundTripper = limitTransport{next: base}
		if len(k.cfg.Headers) > 0 || k.cfg.BearerToken != "" {
			h := http.Header{}
			for key, v := range k.cfg.Headers {
				h.Set(key, v)
			}
			if k.cfg.BearerToken != "" {
				h.Set("Authorization", "Bearer "+k.cfg.BearerToken)
			}
			u, err := url.Parse(k.cfg.URL)
			if err != nil {
				return nil, fmt.Errorf("%w: url: %v", ErrConfig, err) // withDefaults parsed it
			}
			rt = headerTransport{h: h, scheme: u.Scheme, host: u.Host, next: rt}
		}
		hc = &http.Client{Transport: rt, Jar: hc.Jar, CheckRedirect: hc.CheckRedirect, Timeout: hc.Timeout}
		transport = &mcp.StreamableClientTransport{Endpoint: k.cfg.URL, HTTPClient: hc}
	}
	cs, err := client.Connect(cctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: connect: %s%s", ErrUnavailable, k.cfg.Name, k.errText(err), c.stderr.note())
	}
	c.cs = cs
	go func() {
		c.why = cs.Wait()
		close(c.dead)
	}()
	return c, nil
}

// unavailable words an error of a live or dying connection.
func (k *Toolkit) unavailable(c *conn, what string, err error) error {
	lost := errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if lost {
		// Let the session notice, so the exit and the stderr tail are known.
		select {
		case <-c.dead:
		case <-time.After(time.Second):
		}
	}
	select {
	case <-c.dead:
		return fmt.Errorf("%w: %s exited or closed the connection while %s (%s)%s", ErrUnavailable, k.cfg.Name, what, k.errText(err), c.stderr.note())
	default:
	}
	if lost {
		return fmt.Errorf("%w: %s: connection lost while %s (%s)%s", ErrUnavailable, k.cfg.Name, what, k.errText(err), c.stderr.note())
	}
	return fmt.Errorf("%w: %s: %s: %s", ErrUnavailable, k.cfg.Name, what, k.errText(err))
}

// drop forgets c if it is still the current connection, closing it.
func (k *Toolkit) drop(c *conn) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.conn == c {
		k.conn, k.tools = nil, nil
		go func() { _ = c.cs.Close() }()
	}
}

// Close ends the connection and stops a stdio server. Later calls fail with
// ErrUnavailable.
func (k *Toolkit) Close() error {
	k.mu.Lock()
	k.closed = true
	c := k.conn
	k.conn, k.tools = nil, nil
	k.mu.Unlock()
	if c == nil {
		return nil
	}
	err := c.cs.Close()
	if err != nil && !errors.Is(err, mcp.ErrConnectionClosed) && !strings.Contains(err.Error(), "signal: terminated") {
		return fmt.Errorf("mcp server %s: close: %w", k.cfg.Name, err)
	}
	return nil
}

// headerTransport adds the configured headers to the requests for the
// configured URL's origin only: a redirect elsewhere gets none (net/http
// drops Authorization on such a redirect, but cannot know of headers added
// here).
type headerTransport struct {
	h            http.Header
	scheme, host string
	next         http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != t.scheme || !strings.EqualFold(r.URL.Host, t.host) {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for key, v := range t.h {
		r.Header[key] = v
	}
	return t.next.RoundTrip(r)
}

// maxJSONAnswer bounds a JSON (not event-stream) answer: the SDK reads it
// whole, while it bounds an SSE event and a stdio message to this size.
const maxJSONAnswer = mcp.DefaultMaxEventSize

// limitTransport fails a JSON answer's body once it passes maxJSONAnswer.
type limitTransport struct{ next http.RoundTripper }

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "application/json" {
		res.Body = &cappedBody{ReadCloser: res.Body}
	}
	return res, nil
}

type cappedBody struct {
	io.ReadCloser
	read int
}

func (b *cappedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.read += n; b.read > maxJSONAnswer {
		return n, fmt.Errorf("the server's answer is larger than %d bytes", maxJSONAnswer)
	}
	return n, err
}

// tailBuffer keeps the last max bytes written (a server's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// note is the stderr tail as an error suffix.
func (t *tailBuffer) note() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return ""
	}
	return "; server stderr: " + s
}

// passedEnv are the variables of this process a stdio server gets without
// InheritEnv: the ones the MCP reference SDKs pass on Unix (HOME, LOGNAME,
// PATH, SHELL, TERM, USER), and those npx and uvx need for temporary
// files, the locale and a proxy.
var passedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR", "LANG", "LC_ALL",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"}

// serverEnv is a stdio server's environment: this process's whole
// environment with inherit, else only passedEnv's variables, then env (the
// configured variables, which win).
func serverEnv(inherit bool, env map[string]string) []string {
	var out []string
	if inherit {
		out = os.Environ()
	} else {
		for _, k := range passedEnv {
			if v, ok := os.LookupEnv(k); ok {
				out = append(out, k+"="+v)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
