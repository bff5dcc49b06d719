package local_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agentos"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/media/mediatest"
	"github.com/agentryhq/agentry/run"
)

func TestLocal_Conformance(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := local.New(filepath.Join(dir, "media"))
	if err != nil {
		t.Fatal(err)
	}
	mediatest.Run(t, s, false)
	// nothing escaped the directory
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files outside the media dir: %v", entries)
	}
}

func FuzzUpload_NeverWritesOutsideTheRoot(f *testing.F) {
	for _, k := range []string{"a/b.jpg", "../x", "a/../../x", "/etc/passwd", "a\\..\\x", "sessions/ab/c.png", "./a", "a/./b"} {
		f.Add(k)
	}
	parent := f.TempDir()
	root := filepath.Join(parent, "media")
	s, err := local.New(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if err := s.Upload(context.Background(), key, strings.NewReader("x"), 1, ""); err != nil {
			return
		}
		entries, _ := os.ReadDir(parent)
		if len(entries) != 1 || entries[0].Name() != "media" {
			t.Fatalf("key %q wrote outside the root: %v", key, entries)
		}
		_ = s.Delete(context.Background(), key)
	})
}

// A key the disk cannot answer for (a file where a directory of the key
// should be, a directory where the object should be, a symlink loop) is the
// storage failing, not a missing object: media.ErrUnavailable (503 on the
// media route), as the S3 driver answers a failing bucket, never a bare
// error (500) or an existing object that then reads as nothing.
func TestLocal_DiskErrorsAreUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "media")
	s, err := local.New(root)
	if err != nil {
		t.Fatal(err)
	}
	// "notdir" is a file: notdir/x.jpg cannot be looked up (ENOTDIR).
	if err := os.WriteFile(filepath.Join(root, "notdir"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// "isdir.jpg" is a directory where an object should be.
	if err := os.MkdirAll(filepath.Join(root, "isdir.jpg"), 0o750); err != nil {
		t.Fatal(err)
	}
	// "loop.jpg" is a symlink to itself (ELOOP).
	if err := os.Symlink("loop.jpg", filepath.Join(root, "loop.jpg")); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"notdir/x.jpg", "isdir.jpg", "loop.jpg"} {
		// (An upload over the symlink replaces it: the rename repairs the key.)
		if ok, err := s.Exists(ctx, key); ok || !errors.Is(err, media.ErrUnavailable) {
			t.Errorf("Exists(%q) = %v, %v; want media.ErrUnavailable", key, ok, err)
		}
		r, err := s.Download(ctx, key)
		if err == nil {
			r.Close()
		}
		if !errors.Is(err, media.ErrUnavailable) || errors.Is(err, media.ErrNotFound) {
			t.Errorf("Download(%q) = %v; want media.ErrUnavailable", key, err)
		}
		if err := s.Upload(ctx, key, strings.NewReader("x"), 1, ""); key != "loop.jpg" && !errors.Is(err, media.ErrUnavailable) {
			t.Errorf("Upload(%q) = %v; want media.ErrUnavailable", key, err)
		}
	}
	// A missing object is still not found, not unavailable.
	if ok, err := s.Exists(ctx, "missing.jpg"); ok || err != nil {
		t.Errorf("Exists(missing) = %v, %v", ok, err)
	}
	if _, err := s.Download(ctx, "missing.jpg"); !errors.Is(err, media.ErrNotFound) || errors.Is(err, media.ErrUnavailable) {
		t.Errorf("Download(missing) = %v", err)
	}
}

// The media route answers a disk that cannot read an object with 503 (try
// again later), not 500 and not a 200 with an empty body.
func TestMediaRoute_DiskErrorIs503(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "media")
	s, err := local.New(root)
	if err != nil {
		t.Fatal(err)
	}
	d := db.New("db", memory.New())
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeAgent}); err != nil {
		t.Fatal(err)
	}
	ref, err := media.Put(ctx, s, media.Owner{DB: d.ID, Session: "s1"}, "image", "image/jpeg", "a.jpg", []byte("jpeg bytes"))
	if err != nil {
		t.Fatal(err)
	}
	// The object's file becomes a directory: the disk cannot serve it.
	p := filepath.Join(root, filepath.FromSlash(ref.StorageKey))
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p, 0o750); err != nil {
		t.Fatal(err)
	}
	srv, err := agentos.New(agentos.Config{DBs: []*db.DB{d}, MediaStorage: s})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	res, err := http.Get(ts.URL + "/sessions/s1/media/" + ref.MediaID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || strings.Contains(string(body), root) {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}

type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errors.New("the source broke")
	}
	n := min(len(p), r.n)
	r.n -= n
	return n, nil
}

// An upload that fails (a source that breaks, a size that does not match,
// a context cancelled) leaves neither the object nor its temp file.
func TestLocal_FailedUploadLeavesNothing(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "media")
	s, err := local.New(root)
	if err != nil {
		t.Fatal(err)
	}
	const key = "owners/abc/x.bin"
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for name, up := range map[string]func() error{
		"broken source": func() error { return s.Upload(context.Background(), key, &failingReader{n: 70_000}, 100_000, "") },
		"short source":  func() error { return s.Upload(context.Background(), key, strings.NewReader("short"), 100, "") },
		"long source":   func() error { return s.Upload(context.Background(), key, strings.NewReader("longer than said"), 4, "") },
		"cancelled":     func() error { return s.Upload(cancelled, key, strings.NewReader("x"), 1, "") },
	} {
		if err := up(); !errors.Is(err, media.ErrUnavailable) {
			t.Errorf("%s: %v, want media.ErrUnavailable", name, err)
		}
		if ok, err := s.Exists(context.Background(), key); ok || err != nil {
			t.Errorf("%s: the object exists (%v, %v)", name, ok, err)
		}
		entries, _ := os.ReadDir(filepath.Join(root, "owners", "abc"))
		if len(entries) != 0 {
			t.Errorf("%s: left %v", name, entries)
		}
	}
}

// DeletePrefix removes the objects whose keys start with the prefix, as on
// S3: an object whose key is the prefix without its "/" is not under it
// and stays.
func TestLocal_DeletePrefixKeepsTheObjectNamedLikeIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Upload(ctx, "reports/2024", strings.NewReader("kept"), 4, "text/plain"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePrefix(ctx, "reports/2024/"); err != nil {
		t.Fatalf("DeletePrefix: %v", err)
	}
	if ok, err := s.Exists(ctx, "reports/2024"); !ok || err != nil {
		t.Fatalf("the object reports/2024 is gone after DeletePrefix(\"reports/2024/\"): %v, %v", ok, err)
	}
}
