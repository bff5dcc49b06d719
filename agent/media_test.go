package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

func jpeg(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	copy(b, []byte{0xff, 0xd8, 0xff, 0xe0})
	return b
}

func TestMedia_RunStoresAReferenceAndHistoryGetsTheBytesBack(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	store, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	img := jpeg(113 << 10)
	rec := &recorder{Model: script(t, scripted.Turn{Content: "a cat"})}
	a := mustAgent(t, Config{ID: "viewer", Model: rec, DB: d, MediaStorage: store, AddHistoryToContext: true})
	in := run.Input{InputContent: "what is this?", Images: []run.Media{{Content: img, MIMEType: "image/jpeg", Name: "cat.jpg"}}}
	out, err := a.Run(context.Background(), in, WithSessionID("s1"), WithRunID("media-r1"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run: %v", err)
	}
	// the model got the bytes
	if r0 := rec.requests()[0]; len(r0[len(r0)-1].Parts) != 1 || !bytes.Equal(r0[len(r0)-1].Parts[0].Data, img) {
		t.Fatal("the model did not get the image bytes")
	}
	if p := rec.requests()[0][0].Parts; len(p) != 1 || !bytes.Equal(p[0].Data, img) {
		t.Fatal("the model did not get the image bytes")
	}
	row, err := d.GetRun(context.Background(), "media-r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(row.RunData) > 5000 {
		t.Fatalf("stored run_data is %d bytes", len(row.RunData))
	}
	var stored struct {
		Input struct {
			Images []struct {
				Content *string          `json:"content"`
				Ref     *media.Reference `json:"media_reference"`
			} `json:"images"`
		} `json:"input"`
	}
	if err := json.Unmarshal(row.RunData, &stored); err != nil || len(stored.Input.Images) != 1 {
		t.Fatalf("stored input: %v %s", err, row.RunData)
	}
	ref := stored.Input.Images[0].Ref
	if stored.Input.Images[0].Content != nil || ref == nil || ref.Size != int64(len(img)) || ref.SessionID != "s1" || ref.StorageBackend != "local" ||
		ref.MediaType != "image" || ref.MimeType != "image/jpeg" || ref.Filename != "cat.jpg" || ref.URL != "" {
		t.Fatalf("reference = %+v", ref)
	}
	got, err := media.Get(context.Background(), store, ref)
	if err != nil || !bytes.Equal(got, img) {
		t.Fatalf("stored object: %v", err)
	}
	// a new agent (a restarted process: no history cache) reads the image back
	rec2 := &recorder{Model: script(t, scripted.Turn{Content: "still a cat"})}
	a2 := mustAgent(t, Config{ID: "viewer", Model: rec2, DB: d, MediaStorage: store, AddHistoryToContext: true})
	if _, err := a2.Run(context.Background(), run.TextInput("and now?"), WithSessionID("s1")); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, m := range rec2.requests()[0] {
		for _, p := range m.Parts {
			found = found || (m.Role == model.RoleUser && bytes.Equal(p.Data, img))
		}
	}
	if !found {
		t.Fatal("history did not carry the image bytes back to the model")
	}
}

// The same agent's next turn takes the first run's messages from its history
// cache (stored form: the image as a reference) and still gives the model the
// bytes.
func TestMedia_CachedHistoryGetsTheBytesBack(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	store, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	img := jpeg(8 << 10)
	rec := &recorder{Model: script(t, scripted.Turn{Content: "a cat"}, scripted.Turn{Content: "still a cat"})}
	a := mustAgent(t, Config{ID: "viewer", Model: rec, DB: d, MediaStorage: store, AddHistoryToContext: true})
	in := run.Input{InputContent: "what is this?", Images: []run.Media{{Content: img, MIMEType: "image/jpeg"}}}
	if _, err := a.Run(context.Background(), in, WithSessionID("s1"), WithRunID("media-c1")); err != nil {
		t.Fatal(err)
	}
	p := a.prep()
	p.history.mu.Lock()
	e, cached := p.history.entries["media-c1"]
	p.history.mu.Unlock()
	if !cached || !e.media {
		t.Fatalf("the first run is not cached with its media references (cached %v, media %v)", cached, e.media)
	}
	if _, err := a.Run(context.Background(), run.TextInput("and now?"), WithSessionID("s1")); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, m := range rec.requests()[1] {
		for _, p := range m.Parts {
			found = found || (m.Role == model.RoleUser && m.FromHistory && bytes.Equal(p.Data, img))
		}
	}
	if !found {
		t.Fatal("the cached history did not carry the image bytes back to the model")
	}
}

// brokenStorage fails every call, as an S3 that went down mid-run.
type brokenStorage struct{ media.Storage }

func (brokenStorage) Exists(context.Context, string) (bool, error) {
	return false, errors.New("dial tcp 127.0.0.1:9: connection refused")
}

func TestMedia_StorageDownStoresTheRunAsErrorWithoutReferences(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	a := mustAgent(t, Config{Model: scripted.Reply("ok"), DB: d, MediaStorage: brokenStorage{}})
	in := run.Input{InputContent: "x", Images: []run.Media{{Content: jpeg(2000), MIMEType: "image/jpeg"}}}
	out, err := a.Run(context.Background(), in, WithSessionID("s1"), WithRunID("media-r2"))
	if !errors.Is(err, ErrMedia) || !errors.Is(err, media.ErrUnavailable) {
		t.Fatalf("error = %v", err)
	}
	if out.Status != run.StatusError {
		t.Fatalf("status = %s", out.Status)
	}
	row, gerr := d.GetRun(context.Background(), "media-r2")
	if gerr != nil {
		t.Fatal(gerr)
	}
	s := string(row.RunData)
	if row.Status != run.StatusError || !strings.Contains(s, "media storage failed") || strings.Contains(s, "media_reference") || strings.Contains(s, `"content":"/9j`) {
		t.Fatalf("stored: %s %.400s", row.Status, s)
	}
}

// signingStorage is local storage that can sign (as S3 does).
type signingStorage struct{ *local.Storage }

func (signingStorage) URL(_ context.Context, key string, _ time.Duration) (string, error) {
	return "https://media.example/" + key + "?X-Amz-Signature=fresh", nil
}

// urlModel takes images by URL.
type urlModel struct{ *recorder }

func (urlModel) AcceptsURL(t model.PartType, _ string) bool { return t == model.PartImage }

func TestMedia_HistoryGetsASignedURLWhenTheModelTakesURLs(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	base, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	store := signingStorage{base}
	img := jpeg(10_000)
	first := mustAgent(t, Config{ID: "viewer", Model: scripted.Reply("a cat"), DB: d, MediaStorage: store, AddHistoryToContext: true})
	in := run.Input{InputContent: "what is this?", Images: []run.Media{{Content: img, MIMEType: "image/jpeg"}}}
	if _, err := first.Run(context.Background(), in, WithSessionID("s1")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		model model.Model
		url   bool
	}{{"takes URLs", urlModel{&recorder{Model: scripted.Reply("ok")}}, true}, {"needs bytes", &recorder{Model: scripted.Reply("ok")}, false}} {
		a := mustAgent(t, Config{ID: "viewer", Model: tc.model, DB: d, MediaStorage: store, AddHistoryToContext: true})
		if _, err := a.Run(context.Background(), run.TextInput("and now?"), WithSessionID("s1")); err != nil {
			t.Fatal(err)
		}
		rec, _ := tc.model.(*recorder)
		if u, ok := tc.model.(urlModel); ok {
			rec = u.recorder
		}
		var part *model.Part
		for _, m := range rec.requests()[0] {
			for i := range m.Parts {
				part = &m.Parts[i]
			}
		}
		switch {
		case part == nil:
			t.Fatalf("%s: no media part in history", tc.name)
		case tc.url && (part.Data != nil || !strings.HasPrefix(part.URL, "https://media.example/owners/")):
			t.Fatalf("%s: part = url %q, %d bytes", tc.name, part.URL, len(part.Data))
		case !tc.url && (!bytes.Equal(part.Data, img) || part.URL != ""):
			t.Fatalf("%s: part = url %q, %d bytes", tc.name, part.URL, len(part.Data))
		}
	}
}
