package s3_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/mediatest"
	"github.com/agentryhq/agentry/media/s3"
)

const hint = "the S3 test server is not running: .ci/run builds versitygw into ~/.cache/agentry-ci/bin and starts it on AGENTRY_TEST_S3_ENDPOINT (default http://127.0.0.1:7070)"

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// TestConfig is the loopback S3 server's configuration with a bucket name.
func testConfig(bucket string) s3.Config {
	return s3.Config{Bucket: bucket, Endpoint: env("AGENTRY_TEST_S3_ENDPOINT", "http://127.0.0.1:7070"), PathStyle: true,
		AccessKey: env("AGENTRY_TEST_S3_ACCESS_KEY", "agentry"), SecretKey: env("AGENTRY_TEST_S3_SECRET_KEY", "agentry-secret")}
}

// newBucket creates a fresh bucket on the test server, removed afterwards.
func newBucket(t *testing.T) s3.Config {
	t.Helper()
	b := make([]byte, 5)
	rand.Read(b)
	cfg := testConfig("agentry-test-" + hex.EncodeToString(b))
	client := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String(cfg.Endpoint), UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: cfg.AccessKey, SecretAccessKey: cfg.SecretKey}, nil
		})})
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(cfg.Bucket)}); err != nil {
		t.Fatalf("create bucket: %v\n%s", err, hint)
	}
	t.Cleanup(func() {
		out, _ := client.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String(cfg.Bucket)})
		if out != nil {
			for _, o := range out.Contents {
				client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String(cfg.Bucket), Key: o.Key})
			}
		}
		client.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: aws.String(cfg.Bucket)})
	})
	return cfg
}

func TestS3_Conformance(t *testing.T) {
	t.Parallel()
	s, err := s3.New(context.Background(), newBucket(t))
	if err != nil {
		t.Fatal(err)
	}
	mediatest.Run(t, s, true)
}

func TestS3_MissingBucketIsAClearError(t *testing.T) {
	t.Parallel()
	newBucket(t) // the server answers
	_, err := s3.New(context.Background(), testConfig("agentry-no-such-bucket"))
	if !errors.Is(err, s3.ErrNoBucket) {
		t.Fatalf("error = %v, want ErrNoBucket", err)
	}
}

func TestS3_ServerDownIsUnavailable(t *testing.T) {
	t.Parallel()
	cfg := testConfig("any")
	cfg.Endpoint = "http://127.0.0.1:1" // nothing listens
	_, err := s3.New(context.Background(), cfg)
	if !errors.Is(err, media.ErrUnavailable) {
		t.Fatalf("error = %v, want ErrUnavailable", err)
	}
}

// testConfigFor is the direct (unproxied) configuration of a storage's bucket.
func testConfigFor(s *s3.Storage) s3.Config { return testConfig(s.Bucket()) }

// S3 refuses a signed URL valid for more than 7 days (400
// AuthorizationQueryParametersError), though the SDK signs one: such an
// expiry is a configuration error at New, not a redirect to a URL that
// never works; 7 days itself is S3's maximum and works.
func TestS3_PresignExpiryOverSevenDaysIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := newBucket(t)
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
