package webfetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"codeberg.org/readeck/go-readability/v2"
	"codeberg.org/readeck/go-readability/v2/render"
	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/text/transform"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/tool/netguard"
)

// Errors the model can act on; each message says what to do instead.
var (
	ErrUnsupportedContent = errors.New("webfetch: unsupported content type")
	ErrDisallowedByRobots = errors.New("webfetch: disallowed by robots.txt")
	ErrStatus             = errors.New("webfetch: the server answered an error")
)

// Defaults of Config's zero values.
const (
	DefaultMaxBytes  = 5 << 20
	DefaultMaxOutput = 50_000
	DefaultTimeout   = 20 * time.Second
	DefaultUserAgent = "agentry-web-fetch/1.0"
	maxElements      = 100_000 // bounds readability's work on giant pages
)

// Config configures web_fetch. The zero value fetches public http(s) URLs,
// reads at most 5 MiB, returns at most 50,000 bytes and ignores robots.txt.
type Config struct {
	// Network says which non-public destinations may be fetched (none by
	// default): see netguard.Config.
	Network netguard.Config
	// MaxBytes caps the body read from the server; the rest is not read.
	MaxBytes int64
	// MaxOutput caps the text returned to the model, in bytes.
	MaxOutput int
	// Timeout bounds one fetch, robots.txt included.
	Timeout time.Duration
	// RespectRobots, when set, fetches the site's robots.txt first and
	// refuses paths it disallows for UserAgent.
	RespectRobots bool
	UserAgent     string
}

type fetchIn struct {
	URL    string `json:"url" jsonschema:"the http or https URL to read"`
	Format string `json:"format,omitempty" enum:"markdown,text" jsonschema:"markdown (default) keeps headings, links and lists; text is plain"`
}

type fetcher struct {
	cfg          Config
	guard        *netguard.Guard
	client       *http.Client // pages
	robotsClient *http.Client // robots.txt files
	robots       *robotsCache
}

// New returns the "webfetch" toolkit with one tool, web_fetch.
func New(cfg Config) (tool.Toolkit, error) {
	g, err := netguard.New(cfg.Network)
	if err != nil {
		return tool.Toolkit{}, fmt.Errorf("webfetch: %w", err)
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if !httpguts.ValidHeaderFieldValue(cfg.UserAgent) {
		return tool.Toolkit{}, fmt.Errorf("webfetch: user_agent %q holds a line break or control character", cfg.UserAgent)
	}
	f := &fetcher{cfg: cfg, guard: g, client: g.Client(cfg.Timeout), robotsClient: g.Client(cfg.Timeout), robots: newRobotsCache()}
	if cfg.RespectRobots {
		// Each redirect's target must be allowed too, not only the URL
		// asked for. robots.txt itself is read with a client of its own,
		// whose redirects are only guarded.
		guarded := f.client.CheckRedirect
		f.client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if err := guarded(req, via); err != nil {
				return err
			}
			return f.robots.allow(req.Context(), f.robotsClient, req.URL, cfg.UserAgent)
		}
	}
	t, err := tool.Func(tool.FuncConfig{
		Name:        "web_fetch",
		Description: "Fetches a web page and returns its main content as Markdown (or plain text), with the page title and final URL.",
		Timeout:     cfg.Timeout,
	}, f.fetch)
	if err != nil {
		return tool.Toolkit{}, err
	}
	return tool.Toolkit{Name: "webfetch", Tools: []tool.Tool{t}}, nil
}

func (f *fetcher) fetch(ctx context.Context, in fetchIn) (string, error) {
	u, err := url.Parse(strings.TrimSpace(in.URL))
	if err != nil {
		return "", fmt.Errorf("url %q does not parse: %v", in.URL, err)
	}
	if err := f.guard.CheckURL(u); err != nil {
		return "", err
	}
	u.Fragment = ""
	if f.cfg.RespectRobots {
		if err := f.robots.allow(ctx, f.robotsClient, u, f.cfg.UserAgent); err != nil {
			return "", err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("url %q: %v", in.URL, err)
	}
	req.Header.Set("User-Agent", f.cfg.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.1")
	resp, err := f.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("fetching %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("%w: %s answered %s", ErrStatus, u.Redacted(), resp.Status)
	}
	ct := resp.Header.Get("Content-Type")
	kind, err := contentKind(ct)
	if err != nil {
		return "", err
	}
	limit := f.cfg.MaxBytes // one byte more tells a cut body
	if limit < math.MaxInt64 {
		limit++
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", u.Redacted(), err)
	}
	cutBody := int64(len(body)) > f.cfg.MaxBytes
	if cutBody {
		body = body[:f.cfg.MaxBytes]
	}
	final := resp.Request.URL
	var title, content string
	switch kind {
	case "html":
		title, content, err = readable(body, ct, cutBody, final, in.Format == "text")
		if err != nil {
			return "", err
		}
	default:
		// No NUL bytes: the result store refuses them as not text (HTML
		// parsing replaces them already).
		content = strings.ReplaceAll(toUTF8(body, ct, cutBody), "\x00", "\uFFFD")
	}
	var b strings.Builder
	if title != "" {
		fmt.Fprintf(&b, "Title: %s\n", title)
	}
	fmt.Fprintf(&b, "URL: %s\n\n", final.Redacted())
	out, cut := tool.Truncate(strings.TrimSpace(content), f.cfg.MaxOutput)
	b.WriteString(out)
	switch {
	case cutBody:
		// Read only in part: what is shown may be less than max_output.
		fmt.Fprintf(&b, "\n\n[truncated: the page is longer than web_fetch reads (%d bytes)]", f.cfg.MaxBytes)
	case cut:
		fmt.Fprintf(&b, "\n\n[truncated: the page is longer than web_fetch returns (%d bytes)]", f.cfg.MaxOutput)
	}
	return b.String(), nil
}

// contentKind sorts a Content-Type into "html", "text" or an error.
func contentKind(ct string) (string, error) {
	if ct == "" {
		return "html", nil // sniffing would add little: html.Parse reads text too
	}
	// A type with malformed parameters ("text/html; charset") is still
	// its type, as browsers read it.
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return "", fmt.Errorf("%w: %q does not parse", ErrUnsupportedContent, ct)
	}
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return "html", nil
	case strings.HasPrefix(mt, "text/"), mt == "application/json", mt == "application/xml",
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return "text", nil
	}
	return "", fmt.Errorf("%w: %s; web_fetch reads HTML, text, JSON and XML pages", ErrUnsupportedContent, mt)
}

// toUTF8 decodes body from its charset: the one a byte-order mark or the
// Content-Type names; else UTF-8 for JSON (RFC 8259 has no other); else
// what an HTML meta tag names or, without one, UTF-8 when the body is
// valid UTF-8 and windows-1252 when not. The sniffer looks at the first
// kilobyte only and, finding ASCII there, takes windows-1252: every later
// "é" of a UTF-8 page became "Ã©". A cut body (cut) may end in part of a
// UTF-8 character; that part is dropped, not shown as U+FFFD.
func toUTF8(body []byte, ct string, cut bool) string {
	e, name, certain := charset.DetermineEncoding(body, ct)
	isUTF8 := name == "utf-8" && !bytes.HasPrefix(body, utf8BOM)
	if !certain {
		if mt, _, _ := mime.ParseMediaType(ct); mt == "application/json" || strings.HasSuffix(mt, "+json") {
			isUTF8 = true
		} else if name == "windows-1252" && utf8.Valid(clip.DropPartial(body)) {
			// Latin-1 text with letters beyond ASCII is almost never
			// valid UTF-8, so a meta tag naming it on such a page (or the
			// sniffer's guess) is wrong.
			isUTF8 = true
		}
	}
	if isUTF8 {
		if cut {
			body = clip.DropPartial(body)
		}
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	b, err := io.ReadAll(transform.NewReader(bytes.NewReader(body), e.NewDecoder()))
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

var utf8BOM = []byte("\xef\xbb\xbf")

// readable extracts the page's main content (the whole body when readability
// finds no article) as Markdown or text.
func readable(body []byte, ct string, cut bool, page *url.URL, text bool) (title, content string, err error) {
	page8 := toUTF8(body, ct, cut)
	doc, err := html.Parse(strings.NewReader(page8))
	if err != nil {
		// The parser gives up on pages nested deeper than it allows (512
		// open elements: unclosed tags pile up on old pages); their text
		// is still worth reading.
		title, content = tokenText(page8)
		return title, content, nil
	}
	p := readability.NewParser()
	p.MaxElemsToParse = maxElements
	node := doc
	if art, err := p.ParseDocument(doc, page); err == nil && art.Node != nil {
		node, title = art.Node, strings.TrimSpace(art.Title())
	}
	if text {
		return title, render.InnerText(node), nil
	}
	md, err := htmltomarkdown.ConvertNode(node, converter.WithDomain(page.String()))
	if err != nil {
		return "", "", fmt.Errorf("converting the page to Markdown: %v; try format text", err)
	}
	return title, string(md), nil
}

// tokenText is the text of an HTML page read token by token, without a
// tree (so without the parser's depth limit): script and style skipped, a
// line break after block elements.
func tokenText(page string) (title, text string) {
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(page))
	skip, inTitle := 0, false
	for {
		switch tt := z.Next(); tt {
		case html.ErrorToken:
			return title, strings.TrimSpace(b.String())
		case html.StartTagToken, html.EndTagToken:
			name, _ := z.TagName()
			start := tt == html.StartTagToken
			switch string(name) {
			case "script", "style", "noscript", "template":
				if start {
					skip++
				} else if skip > 0 {
					skip--
				}
			case "title":
				inTitle = start
			case "p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "pre", "blockquote":
				if !strings.HasSuffix(b.String(), "\n") {
					b.WriteByte('\n')
				}
			}
		case html.TextToken:
			t := strings.Join(strings.Fields(string(z.Text())), " ")
			switch {
			case t == "" || skip > 0:
			case inTitle:
				title = t
			default:
				if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
					b.WriteByte(' ')
				}
				b.WriteString(t)
			}
		}
	}
}
