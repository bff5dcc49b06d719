package s3_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/s3"
	"github.com/agentryhq/agentry/media/s3/s3test"
)

// A Prefix that does not make clean keys ("x/../y/", "/media/", "a//b/",
// "a/./b/") was taken: versitygw (and any S3-compatible server on a file
// system) stores "x/../y/k" as "y/k", lists nothing under "x/../y/", and
// DeletePrefix, so deleting a session's media, answered nil and left
// every object; a browser also resolves "../" in a signed URL before
// sending it. New now refuses such a prefix (media.ErrInvalidKey, the
// error CheckKey gives such keys); a prefix without a trailing "/" still
// works as before ("media" makes "mediaowners/…").
func TestS3_APrefixThatMakesNoCleanKeyIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := s3test.Bucket(t)
	for _, p := range []string{"x/../y/", "/media/", "a//b/", "a/./b/", "../", "./", "a\\b/", "a\x01/"} {
		cfg := base
		cfg.Prefix = p
		if _, err := s3.New(ctx, cfg); !errors.Is(err, media.ErrInvalidKey) {
			t.Errorf("prefix %q: %v, want media.ErrInvalidKey", p, err)
		}
	}
	for _, p := range []string{"media", "a/b/", "ü/", "a/..b/"} {
		cfg := base
		cfg.Prefix = p
		s, err := s3.New(ctx, cfg)
		if err != nil {
			t.Fatalf("prefix %q: %v", p, err)
		}
		if err := s.Upload(ctx, "owners/k/o.png", bytes.NewReader([]byte("x")), 1, "image/png"); err != nil {
			t.Fatalf("prefix %q: upload: %v", p, err)
		}
		if err := s.DeletePrefix(ctx, "owners/k/"); err != nil {
			t.Fatalf("prefix %q: delete: %v", p, err)
		}
		if ok, err := s.Exists(ctx, "owners/k/o.png"); ok || err != nil {
			t.Errorf("prefix %q: the object is left after DeletePrefix: %v %v", p, ok, err)
		}
	}
}
