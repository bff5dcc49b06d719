package agentos

import (
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/run"
)

// TestCreateRun_UploadWithoutAContentTypeIsSortedByItsExtension: a part of
// "files" without a Content-Type (Python's requests sends none unless told)
// or with application/octet-stream became a generic file: an image so
// uploaded never reached the model as an image (and went to the provider
// as application/octet-stream). As Agno, such a part is sorted by its
// file name's extension, and given that extension's MIME type.
func TestCreateRun_UploadWithoutAContentTypeIsSortedByItsExtension(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	var b strings.Builder
	mw := multipart.NewWriter(&b)
	_ = mw.WriteField("message", "what is this?")
	_ = mw.WriteField("stream", "false")
	for _, p := range []struct{ name, ctype string }{
		{"photo.PNG", ""}, {"clip.mp3", "application/octet-stream"}, {"movie.mp4", ""},
		{"notes.md", ""}, {"blob", ""}, {"data.bin", "application/octet-stream"}, {"typed.png", "text/plain"},
	} {
		h := textproto.MIMEHeader{"Content-Disposition": {`form-data; name="files"; filename="` + p.name + `"`}}
		if p.ctype != "" {
			h.Set("Content-Type", p.ctype)
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(w, "bytes of "+p.name)
	}
	_ = mw.Close()
	res := do(t, http.MethodPost, f.url+"/agents/echo/runs", strings.NewReader(b.String()), map[string]string{"Content-Type": mw.FormDataContentType()})
	out := decode[run.Output](t, res)
	if out.Input == nil {
		t.Fatalf("run has no input: %s", res.body)
	}
	got := func(ms []run.Media) []string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Name+" "+m.MIMEType+" "+m.Format)
		}
		return s
	}
	in := out.Input
	want := map[string][]string{
		"images": {"photo.PNG image/png png"},
		"audio":  {"clip.mp3 audio/mpeg mp3"},
		"videos": {"movie.mp4 video/mp4 mp4"},
		// A type the client gave is kept (as Agno, text/plain is a document).
		"files": {"notes.md text/markdown md", "blob application/octet-stream octet-stream", "data.bin application/octet-stream octet-stream", "typed.png text/plain plain"},
	}
	for kind, list := range map[string][]run.Media{"images": in.Images, "audio": in.Audio, "videos": in.Videos, "files": in.Files} {
		if g := got(list); strings.Join(g, "|") != strings.Join(want[kind], "|") {
			t.Errorf("%s = %q, want %q", kind, g, want[kind])
		}
	}
}
