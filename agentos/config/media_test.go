package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/media/s3"
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
