package s3_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agentos"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/s3"
	"github.com/agentryhq/agentry/media/s3/s3test"
	"github.com/agentryhq/agentry/run"
)

func TestMediaRoute_RedirectsToAFreshSignedURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := s3.New(ctx, s3test.Bucket(t))
	if err != nil {
		t.Fatal(err)
	}
	d := db.New("db", memory.New())
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeAgent}); err != nil {
		t.Fatal(err)
	}
	img := jpeg(20_000)
	ref, err := media.Put(ctx, store, media.Owner{DB: d.ID, Session: "s1"}, "image", "image/jpeg", "a.jpg", img)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := agentos.New(agentos.Config{DBs: []*db.DB{d}, MediaStorage: store})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(ts.URL + "/sessions/s1/media/" + ref.MediaID)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusFound || !strings.Contains(loc, "X-Amz-Signature=") || !strings.Contains(loc, "X-Amz-Expires=3600") {
		t.Fatalf("%d Location %q", res.StatusCode, loc)
	}
	got, err := http.Get(loc)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if !bytes.Equal(b, img) {
		t.Fatalf("signed URL gave %d bytes", len(b))
	}
	if res, _ := noFollow.Get(ts.URL + "/sessions/s1/media/" + strings.Repeat("0", 64) + ".jpg"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("a missing object redirected: %d", res.StatusCode)
	}
}

// S3 going down is the storage being unavailable: the media route answers
// 503 (retry later), not a 500 that reads as a server bug.
func TestMediaRoute_S3DownIs503(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, proxy := s3test.Proxied(t, 0)
	d := db.New("db", memory.New())
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeAgent}); err != nil {
		t.Fatal(err)
	}
	ref, err := media.Put(ctx, store, media.Owner{DB: d.ID, Session: "s1"}, "image", "image/jpeg", "a.jpg", jpeg(2_000))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := agentos.New(agentos.Config{DBs: []*db.DB{d}, MediaStorage: store})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	proxy.Cut()
	res, err := http.Get(ts.URL + "/sessions/s1/media/" + ref.MediaID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || strings.Contains(string(body), "127.0.0.1") {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}

// The media route redirects to the bucket, which serves the type the client
// gave: an HTML or SVG object must come back as a download there too.
func TestMediaRoute_ActiveContentFromTheBucketIsADownload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := s3.New(ctx, s3test.Bucket(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ mimeType, filename, disposition string }{
		{"text/html", "page.html", "attachment"},
		{"image/svg+xml", "logo.svg", "attachment"},
		{"image/jpeg", "cat.jpg", ""},
	} {
		ref, err := media.Put(ctx, store, media.Owner{Session: "s1"}, "file", c.mimeType, c.filename, []byte("<script>alert(1)</script>"+c.filename))
		if err != nil {
			t.Fatal(err)
		}
		u, err := store.URL(ctx, ref.StorageKey, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Get("Content-Disposition"); res.StatusCode != http.StatusOK || !strings.HasPrefix(got, c.disposition) || (c.disposition == "" && got != "") {
			t.Errorf("%s: %d, Content-Type %q, Content-Disposition %q", c.filename, res.StatusCode, res.Header.Get("Content-Type"), got)
		}
	}
}
