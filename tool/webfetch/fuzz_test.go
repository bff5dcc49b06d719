package webfetch

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// FuzzReadable feeds hostile page bodies and Content-Types through what
// web_fetch does with a server's answer: sorting the type, decoding the
// charset and extracting the article as Markdown or text. It must not panic,
// and a refused type must be ErrUnsupportedContent.
func FuzzReadable(f *testing.F) {
	for _, s := range []struct{ body, ct string }{
		{"<html><head><title>T</title></head><body><article><h1>H</h1><p>text <a href='/x'>link</a></p></article></body></html>", "text/html; charset=utf-8"},
		{"<p>caf\xe9</p>", "text/html; charset=latin1"},
		{"<table><tr><td><ul><li><pre><code>x</code></pre></li></ul></td></tr></table>", ""},
		{"<a href='javascript:alert(1)'>x</a><img src=x onerror=y>", "application/xhtml+xml"},
		{"<div>" + "<div>", "text/html; charset=utf-16"},
		{`{"a": [1, 2]}`, "application/json"},
		{"\xff\xfe<\x00p\x00>\x00", "text/html; charset=utf-16le"},
		{"x", "text/html; charset="},
		{"x", "image/png"},
		{"x", "text/html; ;;"},
		{"<title>t</title>" + strings.Repeat("<b>", 600) + "<script>x</script>text", "text/html"}, // too deep to parse
	} {
		f.Add([]byte(s.body), s.ct, false)
	}
	page, _ := url.Parse("https://example.com/a/b")
	f.Fuzz(func(t *testing.T, body []byte, ct string, text bool) {
		kind, err := contentKind(ct)
		if err != nil {
			if !errors.Is(err, ErrUnsupportedContent) {
				t.Fatalf("content type %q: %v does not wrap ErrUnsupportedContent", ct, err)
			}
			return
		}
		if kind != "html" {
			_ = toUTF8(body, ct, text)
			return
		}
		_, _, _ = readable(body, ct, text, page, text)
	})
}
