package agentos

import (
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// TestCreateRun_UploadWithoutAContentTypeIsSortedByItsExtension: a part of
// "files" without a Content-Type (Python's requests sends none unless told)
// or with application/octet-stream became a generic file: an image so
// uploaded never reached the model as an image (and went to the provider
// as application/octet-stream). As Agno, such a part is sorted by its
// file name's extension, and given that extension's MIME type. Its format
// is its extension, as Agno's extract_format gives it; an empty file is left
// out, as Agno leaves it.
func TestCreateRun_UploadWithoutAContentTypeIsSortedByItsExtension(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	res := postUploads(t, f.url, []upload{
		{"photo.PNG", ""}, {"clip.mp3", "application/octet-stream"}, {"movie.mp4", ""},
		{"notes.md", ""}, {"typed.png", "text/plain"}, {"report", "application/pdf"}, {"empty.txt", "text/plain; charset=utf-8"},
	})
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
		"files": {"notes.md text/markdown md", "typed.png text/plain png", "report application/pdf pdf"},
	}
	for kind, list := range map[string][]run.Media{"images": in.Images, "audio": in.Audio, "videos": in.Videos, "files": in.Files} {
		if g := got(list); strings.Join(g, "|") != strings.Join(want[kind], "|") {
			t.Errorf("%s = %q, want %q", kind, g, want[kind])
		}
	}
}

type upload struct{ name, ctype string }

// postUploads posts a run with these files, each holding "bytes of" its
// name but for those named empty*.
func postUploads(t *testing.T, base string, files []upload) response {
	t.Helper()
	var b strings.Builder
	mw := multipart.NewWriter(&b)
	_ = mw.WriteField("message", "what is this?")
	_ = mw.WriteField("stream", "false")
	for _, p := range files {
		h := textproto.MIMEHeader{"Content-Disposition": {`form-data; name="files"; filename="` + p.name + `"`}}
		if p.ctype != "" {
			h.Set("Content-Type", p.ctype)
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p.name, "empty") {
			_, _ = io.WriteString(w, "bytes of "+p.name)
		}
	}
	_ = mw.Close()
	return do(t, http.MethodPost, base+"/agents/echo/runs", strings.NewReader(b.String()), map[string]string{"Content-Type": mw.FormDataContentType()})
}

// TestCreateRun_UploadOfATypeAgnoDoesNotTakeIs400: a file whose type Agno
// does not take (by its Content-Type, or by its extension when it has
// none) went to the model as a generic file, for the provider to refuse
// after the run had started; Agno answers 400 "Unsupported file type"
// before anything runs, and so does Agentry now.
func TestCreateRun_UploadOfATypeAgnoDoesNotTakeIs400(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	for _, p := range []upload{{"blob", ""}, {"data.bin", "application/octet-stream"}, {"logo.svg", "image/svg+xml"},
		{"archive.zip", "application/zip"}, {"noext", "application/octet-stream"}} {
		res := postUploads(t, f.url, []upload{{"fine.txt", "text/plain"}, p})
		if res.status != http.StatusBadRequest || res.detail(t) != "Unsupported file type" {
			t.Errorf("%s (%q): %d %s, want 400", p.name, p.ctype, res.status, res.body)
		}
	}
	if n := countRuns(t, f.db, db.RunFilter{}); n != 0 {
		t.Errorf("refused uploads stored %d runs", n)
	}
}
