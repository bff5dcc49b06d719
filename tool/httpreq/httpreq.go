package httpreq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/html/charset"
	"golang.org/x/net/http/httpguts"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/tool/netguard"
)

// ErrHostNotAllowed marks a URL whose host is not on the allow-list.
var ErrHostNotAllowed = errors.New("httpreq: host not allowed")

// Defaults of Config's zero values.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxRequestBytes  = 256 << 10
	DefaultMaxResponseBytes = 1 << 20
)

// Methods the tool can send.
var Methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"}

// reservedHeaders are set by the HTTP stack or the configuration, never by
// the model. Accept-Encoding among them: the client asks for gzip and
// decodes it, but not once a request names its own encodings (the body
// then came back compressed, as replacement characters).
var reservedHeaders = []string{"Accept-Encoding", "Host", "Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "Te", "Trailer", "Proxy-Authorization", "Proxy-Connection", "Keep-Alive"}

// Config configures http_request.
type Config struct {
	// AllowedHosts lists the hosts requests may go to: "api.example.com", or
	// "*.example.com" for its subdomains. Required.
	AllowedHosts []string
	// Methods limits the methods (default all of Methods).
	Methods []string
	// Headers are sent with every request and cannot be overridden by the
	// model (e.g. an Authorization header); values are never shown to it.
	// They go over https only: while Headers are set, a request to a plain
	// http URL, or a redirect to one, is refused unless HeadersOverHTTP.
	Headers map[string]string
	// HeadersOverHTTP sends Headers over plain http too (a service on a
	// private network without TLS): anyone on the path reads them.
	HeadersOverHTTP bool
	// Network opens non-public destinations (see netguard.Config).
	Network          netguard.Config
	Timeout          time.Duration
	MaxRequestBytes  int
	MaxResponseBytes int64
}

type requestIn struct {
	Method  string            `json:"method" enum:"GET,POST,PUT,PATCH,DELETE,HEAD" jsonschema:"the HTTP method"`
	URL     string            `json:"url" jsonschema:"an http or https URL on an allowed host"`
	Headers map[string]string `json:"headers,omitempty" jsonschema:"extra request headers"`
	Body    string            `json:"body,omitempty" jsonschema:"request body (e.g. JSON text); set Content-Type in headers"`
}

// Response is what http_request returns.
type Response struct {
	StatusCode int               `json:"status_code"`
	Headers    map[string]string `json:"headers"`
	Body       string            `json:"body"`
	Truncated  bool              `json:"truncated,omitempty"`
}

type requester struct {
	cfg    Config
	guard  *netguard.Guard
	client *http.Client
	hosts  []string
}

// New returns the "http_request" toolkit with one tool, http_request.
func New(cfg Config) (tool.Toolkit, error) {
	r, err := newRequester(cfg)
	if err != nil {
		return tool.Toolkit{}, err
	}
	t, err := tool.Func(tool.FuncConfig{
		Name: "http_request",
		Description: fmt.Sprintf("Sends one HTTP request to an allowed host (%s) and returns JSON with status_code, headers and body. Methods: %s.",
			strings.Join(cfg.AllowedHosts, ", "), strings.Join(r.cfg.Methods, ", ")),
		Timeout: r.cfg.Timeout,
	}, r.do)
	if err != nil {
		return tool.Toolkit{}, err
	}
	return tool.Toolkit{Name: "http_request", Tools: []tool.Tool{t}}, nil
}

// newRequester checks cfg and builds the tool's requester and client.
func newRequester(cfg Config) (*requester, error) {
	if len(cfg.AllowedHosts) == 0 {
		return nil, errors.New("httpreq: allowed_hosts is required (the hosts the agent may call)")
	}
	g, err := netguard.New(cfg.Network)
	if err != nil {
		return nil, fmt.Errorf("httpreq: %w", err)
	}
	r := &requester{cfg: cfg, guard: g}
	for _, h := range cfg.AllowedHosts {
		// A URL's host is compared without its trailing dot; so is an entry.
		h = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
		if h == "" || strings.ContainsAny(h, "/:@ ") || strings.Contains(strings.TrimPrefix(h, "*."), "*") {
			return nil, fmt.Errorf("httpreq: allowed_hosts entry %q: write a host name such as api.example.com or *.example.com", h)
		}
		r.hosts = append(r.hosts, h)
	}
	if err := checkHeaders(cfg.Headers); err != nil {
		return nil, err
	}
	r.cfg.Methods = slices.Clone(cfg.Methods)
	if len(r.cfg.Methods) == 0 {
		r.cfg.Methods = slices.Clone(Methods)
	}
	for i, m := range r.cfg.Methods {
		m = strings.ToUpper(m)
		if !slices.Contains(Methods, m) {
			return nil, fmt.Errorf("httpreq: method %q: use %s", m, strings.Join(Methods, ", "))
		}
		r.cfg.Methods[i] = m
	}
	if r.cfg.Timeout <= 0 {
		r.cfg.Timeout = DefaultTimeout
	}
	if r.cfg.MaxRequestBytes <= 0 {
		r.cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if r.cfg.MaxResponseBytes <= 0 {
		r.cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	r.client = g.Client(r.cfg.Timeout)
	guardRedirect := r.client.CheckRedirect
	r.client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := r.hostAllowed(req.URL); err != nil {
			return err
		}
		// A 301, 302 or 303 turns the method into GET.
		if !slices.Contains(r.cfg.Methods, req.Method) {
			return fmt.Errorf("the redirect to %s would send %s, which is not allowed (%s)", req.URL.Redacted(), req.Method, strings.Join(r.cfg.Methods, ", "))
		}
		if err := r.headersSecure(req.URL); err != nil {
			return fmt.Errorf("the redirect to %s: %w", req.URL.Redacted(), err)
		}
		return guardRedirect(req, via)
	}
	return r, nil
}

// errHeadersOverHTTP is the error of a request that would send the
// configured Headers over plain http.
var errHeadersOverHTTP = errors.New("the configured headers are sent over https only (set headers_over_http to send them over plain http)")

// headersSecure refuses a plain http URL while Headers are set, unless
// HeadersOverHTTP.
func (r *requester) headersSecure(u *url.URL) error {
	if len(r.cfg.Headers) > 0 && !r.cfg.HeadersOverHTTP && strings.EqualFold(u.Scheme, "http") {
		return errHeadersOverHTTP
	}
	return nil
}

func (r *requester) hostAllowed(u *url.URL) error {
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	for _, a := range r.hosts {
		if h == a || strings.HasPrefix(a, "*.") && strings.HasSuffix(h, a[1:]) {
			return nil
		}
	}
	return fmt.Errorf("%w: %q; allowed hosts: %s", ErrHostNotAllowed, h, strings.Join(r.cfg.AllowedHosts, ", "))
}

func (r *requester) do(ctx context.Context, in requestIn) (Response, error) {
	method := strings.ToUpper(in.Method)
	if !slices.Contains(r.cfg.Methods, method) {
		return Response{}, fmt.Errorf("method %s is not allowed; use %s", method, strings.Join(r.cfg.Methods, ", "))
	}
	u, err := url.Parse(strings.TrimSpace(in.URL))
	if err != nil {
		return Response{}, fmt.Errorf("url %q does not parse: %v", in.URL, err)
	}
	if err := r.guard.CheckURL(u); err != nil {
		return Response{}, err
	}
	if err := r.hostAllowed(u); err != nil {
		return Response{}, err
	}
	if err := r.headersSecure(u); err != nil {
		return Response{}, fmt.Errorf("%s: %w", u.Redacted(), err)
	}
	if len(in.Body) > r.cfg.MaxRequestBytes {
		return Response{}, fmt.Errorf("body is %d bytes; at most %d", len(in.Body), r.cfg.MaxRequestBytes)
	}
	var body io.Reader
	if in.Body != "" {
		body = strings.NewReader(in.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return Response{}, fmt.Errorf("building the request: %v", err)
	}
	for k, v := range in.Headers {
		ck := http.CanonicalHeaderKey(strings.TrimSpace(k))
		if slices.Contains(reservedHeaders, ck) {
			return Response{}, fmt.Errorf("header %s is set by the HTTP client; leave it out", ck)
		}
		if _, set := r.configured(ck); set {
			return Response{}, fmt.Errorf("header %s is set by the configuration; leave it out", ck)
		}
		if strings.ContainsAny(k+v, "\r\n\x00") {
			return Response{}, fmt.Errorf("header %s contains a line break or NUL", ck)
		}
		if len(req.Header.Values(ck)) > 0 {
			return Response{}, fmt.Errorf("header %s is given twice (names are case-insensitive); give it once", ck)
		}
		req.Header.Set(ck, v)
	}
	for k, v := range r.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return Response{}, fmt.Errorf("%s %s: %w", method, u.Redacted(), err)
	}
	defer resp.Body.Close()
	limit := r.cfg.MaxResponseBytes // one byte more tells a truncated body
	if limit < math.MaxInt64 {
		limit++
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return Response{}, fmt.Errorf("reading the response: %w", err)
	}
	out := Response{StatusCode: resp.StatusCode, Headers: map[string]string{}}
	if int64(len(b)) > r.cfg.MaxResponseBytes {
		b, out.Truncated = b[:r.cfg.MaxResponseBytes], true
	}
	out.Body = decodeBody(b, resp.Header.Get("Content-Type"), out.Truncated)
	for _, k := range []string{"Content-Type", "Location", "Retry-After", "Etag", "Last-Modified", "Link"} {
		if v := resp.Header.Get(k); v != "" {
			out.Headers[k] = v
		}
	}
	return out, nil
}

// decodeBody returns b as UTF-8 text: decoded from the charset the
// Content-Type ct names (Agno's tool returns requests' response.text, in
// that charset too), else as UTF-8 with bytes that are not replaced by
// U+FFFD. A cut body (cut) may end in part of a UTF-8 character; that part
// is dropped rather than shown as U+FFFD.
func decodeBody(b []byte, ct string, cut bool) string {
	if _, params, err := mime.ParseMediaType(ct); err == nil && params["charset"] != "" {
		if e, name := charset.Lookup(params["charset"]); e != nil && name != "utf-8" {
			if d, err := e.NewDecoder().Bytes(b); err == nil {
				return strings.ToValidUTF8(string(d), "\uFFFD")
			}
		}
	}
	if cut {
		b = clip.DropPartial(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// checkHeaders refuses configured headers that could not go out as
// written: names the HTTP client sets itself (it drops or replaces them),
// invalid names or values (every request would fail), and one header
// under two spellings (which value went out depended on map order).
func checkHeaders(h map[string]string) error {
	seen := map[string]bool{}
	for k, v := range h {
		ck := http.CanonicalHeaderKey(k)
		switch {
		case !httpguts.ValidHeaderFieldName(k):
			return fmt.Errorf("httpreq: headers: %q is not a header name", k)
		case slices.Contains(reservedHeaders, ck):
			return fmt.Errorf("httpreq: headers: %s is set by the HTTP client; leave it out", ck)
		case !httpguts.ValidHeaderFieldValue(v):
			return fmt.Errorf("httpreq: headers: the value of %s holds a line break or control character", ck)
		case seen[ck]:
			return fmt.Errorf("httpreq: headers: %s is given twice (names are case-insensitive)", ck)
		}
		seen[ck] = true
	}
	return nil
}

// configured reports a header set by Config.Headers (case-insensitively).
func (r *requester) configured(canonical string) (string, bool) {
	for k, v := range r.cfg.Headers {
		if http.CanonicalHeaderKey(k) == canonical {
			return v, true
		}
	}
	return "", false
}

// MarshalJSON keeps the body readable when it is JSON.
func (r Response) MarshalJSON() ([]byte, error) {
	type plain Response
	if !r.Truncated && json.Valid([]byte(r.Body)) && strings.HasPrefix(r.Headers["Content-Type"], "application/json") {
		return json.Marshal(struct {
			plain
			Body json.RawMessage `json:"body"`
		}{plain(r), json.RawMessage(r.Body)})
	}
	return json.Marshal(plain(r))
}
