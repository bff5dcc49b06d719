package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/s3"
	"github.com/agentryhq/agentry/media/s3/s3test"
)

func TestMediaStorage_OpenDefaultsToTheDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var none *MediaStorage
	s, err := none.Open(context.Background(), dir)
	if err != nil || s.Backend() != "local" {
		t.Fatalf("default: %v %v", s, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "media")); err != nil || !fi.IsDir() {
		t.Fatalf("media dir: %v", err)
	}
	if s, err := (&MediaStorage{Type: "none"}).Open(context.Background(), dir); s != nil || err != nil {
		t.Fatalf("none: %v %v", s, err)
	}
}

func TestMediaStorage_BadConfigIsRefusedAtStart(t *testing.T) {
	t.Parallel()
	endpoint := os.Getenv("AGENTRY_TEST_S3_ENDPOINT")
	if endpoint == "" {
		endpoint = "http://127.0.0.1:7070"
	}
	for _, tt := range []struct {
		cfg  MediaStorage
		want string
	}{
		{MediaStorage{Type: "ftp"}, `type "ftp" is not local, s3 or none`},
		{MediaStorage{Type: "s3"}, "needs a bucket"},
		{MediaStorage{Type: "s3", Bucket: "b", ResponseTimeout: -time.Second}, "response_timeout -1s is negative"},
		{MediaStorage{Bucket: "b"}, "type local does not use them"},
		{MediaStorage{Type: "local", ResponseTimeout: time.Second}, "type local does not use them"},
		{MediaStorage{Type: "none", PublicRead: true}, "type none does not use them"},
		{MediaStorage{Type: "s3", Bucket: "b", Dir: "/tmp/m"}, "type s3 does not use it"},
		{MediaStorage{Type: "none", Dir: "/tmp/m"}, "type none does not use it"},
		{MediaStorage{Type: "s3", Bucket: "agentry-no-such-bucket", Endpoint: endpoint, PathStyle: true, AccessKey: "agentry", SecretKey: "agentry-secret"}, "bucket does not exist"},
	} {
		_, err := tt.cfg.Open(context.Background(), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.cfg, err, tt.want)
		}
		if tt.want == "bucket does not exist" && !errors.Is(err, s3.ErrNoBucket) {
			t.Errorf("not ErrNoBucket: %v", err)
		}
	}
	cfg, err := Parse([]byte("media_storage:\n  type: s3\n  bucket: b\n  presign_expiry: 10m\n  path_style: true\n"), "os.yaml")
	if err != nil || cfg.MediaStorage.Bucket != "b" || !cfg.MediaStorage.PathStyle {
		t.Fatalf("parse: %+v %v", cfg.MediaStorage, err)
	}
	if _, err := Parse([]byte("media_storage:\n  type: s3\n  buckit: b\n"), "os.yaml"); err == nil {
		t.Fatal("a misspelt key was accepted")
	}
}

// response_timeout reaches the storage: a stalled server fails a call as
// unavailable after it (the 60 s default would outlast the test's wait).
// It was not a key at all: the default applied to every server.
func TestMediaStorage_ResponseTimeoutApplies(t *testing.T) {
	t.Parallel()
	s3cfg, proxy := s3test.ProxiedBucket(t)
	cfg, err := Parse([]byte(fmt.Sprintf("media_storage:\n  type: s3\n  bucket: %s\n  endpoint: %s\n  path_style: true\n  access_key: %s\n  secret_key: %s\n  response_timeout: 1s\n",
		s3cfg.Bucket, s3cfg.Endpoint, s3cfg.AccessKey, s3cfg.SecretKey)), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	store, err := cfg.MediaStorage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proxy.Stall()
	defer proxy.Restore()
	done := make(chan error, 1)
	go func() { _, err := store.Exists(context.Background(), "any/key"); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, media.ErrUnavailable) {
			t.Fatalf("a call to a stalled server: %v, want media.ErrUnavailable", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a call to a stalled server is still waiting after 30 s: response_timeout did not apply")
	}
}
