package agentos

import (
	"encoding/base64"
	"io"
	"maps"
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

// TestCreateRun_MediaFormFieldsAsAgnosClientSendsThem: Agno's client (a
// team delegating to a remote member) sends a run's media as JSON form
// fields, images, audio, videos and input_files, each a list of media
// objects with base64 content; they were refused as unknown fields (422),
// so such a member could not be served. They reach the run's input after
// the uploads; a filepath beside the content (Agno's client sends the
// sender's path) is dropped, and one alone (a path on the server, which
// Agno would read) and an object with nothing to read are refused.
func TestCreateRun_MediaFormFieldsAsAgnosClientSendsThem(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	fields := map[string]string{"message": "look", "stream": "false",
		"images": `[{"id":"img-1","content":"` + base64.StdEncoding.EncodeToString([]byte("png bytes")) + `","mime_type":"image/png","format":"png","detail":"high",` +
			`"filepath":"/home/someone/cat.png"}]`,
		"audio":       `[{"content":"` + base64.StdEncoding.EncodeToString([]byte("mp3 bytes")) + `","format":"mp3"}]`,
		"videos":      `[]`,
		"input_files": `[{"content":"` + base64.StdEncoding.EncodeToString([]byte("a,b")) + `","mime_type":"text/csv","filename":"t.csv"}]`,
	}
	out := decode[run.Output](t, postForm(t, f.url+"/agents/echo/runs", fields, nil))
	in := out.Input
	if out.Status != run.StatusCompleted || in == nil || len(in.Images) != 1 || len(in.Audio) != 1 || len(in.Videos) != 0 || len(in.Files) != 1 {
		t.Fatalf("run %s %v input %+v", out.Status, out.Content, in)
	}
	img := in.Images[0]
	if img.ID != "img-1" || string(img.Content) != "png bytes" || img.MIMEType != "image/png" || img.Size != 9 || string(img.Extra["detail"]) != `"high"` ||
		img.Filepath != "" {
		t.Errorf("image %+v", img)
	}
	if string(in.Audio[0].Content) != "mp3 bytes" || in.Audio[0].ID == "" || string(in.Files[0].Content) != "a,b" {
		t.Errorf("audio %+v files %+v", in.Audio[0], in.Files[0])
	}
	for _, bad := range []map[string]string{
		{"images": `[{"filepath":"/etc/passwd"}]`},
		{"input_files": `{"content":"YQ=="}`},
		{"videos": `[{"mime_type":"video/mp4"}]`},
		{"audio": `[{"content":"YQ==","name":"a\u0000"}]`},
	} {
		fields := map[string]string{"message": "look", "stream": "false"}
		maps.Copy(fields, bad)
		if res := postForm(t, f.url+"/agents/echo/runs", fields, nil); res.status != http.StatusUnprocessableEntity {
			t.Errorf("%v: %d %s, want 422", bad, res.status, res.body)
		}
	}
}

// TestUploadTypes_EveryExtensionTypeHasAKind: a file sorted by its
// extension gets that extension's type, which must be one the upload kinds
// know; .wmv's (video/x-ms-wmv) was not, so a .wmv sent without a
// Content-Type was 400, where Agno takes it as a video.
func TestUploadTypes_EveryExtensionTypeHasAKind(t *testing.T) {
	t.Parallel()
	for ext, mimeType := range uploadTypes {
		if _, ok := uploadKinds[mimeType]; !ok {
			t.Errorf(".%s's type %s has no upload kind", ext, mimeType)
		}
		if kind, _, _, err := classifyUpload(uploadedFile{Filename: "f." + ext}); err != nil || kind == "" {
			t.Errorf(".%s without a Content-Type: %q %v", ext, kind, err)
		}
	}
}
