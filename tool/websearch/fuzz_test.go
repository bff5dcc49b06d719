package websearch

import (
	"net/url"
	"os"
	"strings"
	"testing"
)

func FuzzParseDuckDuckGoHTML(f *testing.F) {
	for _, name := range []string{"testdata/ddg.html", "testdata/ddg-challenge.html"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`<div class="result"><a class="result__a" href="//duckduckgo.com/l/?uddg=%zz">x</a></div>`))
	f.Add([]byte(`<div class="result"><a class="result__a" href="//duckduckgo.com/l/?uddg=file%3A%2F%2F%2Fetc%2Fpasswd">x</a></div>`))
	f.Fuzz(func(t *testing.T, page []byte) {
		res, err := ParseDuckDuckGoHTML(page)
		if err != nil {
			return
		}
		for _, r := range res {
			u, err := url.Parse(r.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				t.Fatalf("result URL %q is not an http(s) URL", r.URL)
			}
		}
	})
}

// FuzzStripTags: Brave's highlighted titles and snippets never panic the
// tag stripper, text without markup comes back as it was, and no tag
// survives (an escaped one, &lt;b&gt;, is text and may).
func FuzzStripTags(f *testing.F) {
	for _, s := range []string{"Tutorial: <strong>Generics</strong>", "a &amp; b", "a < b > c", "<script>x</script>", "<", "&", "<strong", "plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := stripTags(s)
		if !strings.ContainsAny(s, "<&") && got != s {
			t.Fatalf("stripTags(%q) = %q, want it unchanged", s, got)
		}
		if !strings.Contains(s, "&") && strings.Contains(got, "<strong>") {
			t.Fatalf("stripTags(%q) = %q keeps a tag", s, got)
		}
	})
}
