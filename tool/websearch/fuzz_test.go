package websearch

import (
	"net/url"
	"os"
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
