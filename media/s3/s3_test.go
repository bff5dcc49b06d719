package s3_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/mediatest"
	"github.com/agentryhq/agentry/media/s3"
	"github.com/agentryhq/agentry/media/s3/s3test"
)

func TestS3_Conformance(t *testing.T) {
	t.Parallel()
	s, err := s3.New(context.Background(), s3test.Bucket(t))
	if err != nil {
		t.Fatal(err)
	}
	mediatest.Run(t, s, true)
}

func TestS3_MissingBucketIsAClearError(t *testing.T) {
	t.Parallel()
	s3test.Bucket(t) // the server answers
	_, err := s3.New(context.Background(), s3test.Config("agentry-no-such-bucket"))
	if !errors.Is(err, s3.ErrNoBucket) {
		t.Fatalf("error = %v, want ErrNoBucket", err)
	}
}

func TestS3_ServerDownIsUnavailable(t *testing.T) {
	t.Parallel()
	cfg := s3test.Config("any")
	cfg.Endpoint = "http://127.0.0.1:1" // nothing listens
	_, err := s3.New(context.Background(), cfg)
	if !errors.Is(err, media.ErrUnavailable) {
		t.Fatalf("error = %v, want ErrUnavailable", err)
	}
}

// testConfigFor is the direct (unproxied) configuration of a storage's bucket.
func testConfigFor(s *s3.Storage) s3.Config { return s3test.Config(s.Bucket()) }

// S3 refuses a signed URL valid for more than 7 days (400
// AuthorizationQueryParametersError), though the SDK signs one: such an
// expiry is a configuration error at New, not a redirect to a URL that
// never works; 7 days itself is S3's maximum and works.
func TestS3_PresignExpiryOverSevenDaysIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := s3test.Bucket(t)
	cfg.PresignExpiry = 7*24*time.Hour + time.Second
	if _, err := s3.New(ctx, cfg); err == nil || !strings.Contains(err.Error(), "7 days") {
		t.Fatalf("New with a presign expiry over 7 days: %v", err)
	}
	cfg.PresignExpiry = 7 * 24 * time.Hour
	s, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := media.Put(ctx, s, media.Owner{DB: "db", Session: "s1"}, "image", "image/jpeg", "a.jpg", jpeg(1000))
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.URL(ctx, ref.StorageKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) != 1000 {
		t.Fatalf("GET a URL signed for 7 days: %d %.200s", resp.StatusCode, body)
	}
	if u, err := s.URL(ctx, ref.StorageKey, 8*24*time.Hour); err == nil {
		t.Fatalf("URL signed for 8 days: %s", u)
	}
}
