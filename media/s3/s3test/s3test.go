package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentryhq/agentry/internal/faultproxy"
	"github.com/agentryhq/agentry/media/s3"
)

// Hint says how the S3 test server is started.
const Hint = "the S3 test server is not running: .ci/run builds versitygw into ~/.cache/agentry-ci/bin and starts it on AGENTRY_TEST_S3_ENDPOINT (default http://127.0.0.1:7070)"

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Config is the test server's configuration with bucket as its bucket
// (which need not exist).
func Config(bucket string) s3.Config {
	return s3.Config{Bucket: bucket, Endpoint: env("AGENTRY_TEST_S3_ENDPOINT", "http://127.0.0.1:7070"), PathStyle: true,
		AccessKey: env("AGENTRY_TEST_S3_ACCESS_KEY", "agentry"), SecretKey: env("AGENTRY_TEST_S3_SECRET_KEY", "agentry-secret")}
}

// Bucket creates a bucket of a fresh name on the test server, emptied and
// removed when the test ends, and returns its configuration.
func Bucket(t testing.TB) s3.Config {
	t.Helper()
	b := make([]byte, 5)
	rand.Read(b)
	cfg := Config("agentry-test-" + hex.EncodeToString(b))
	client := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String(cfg.Endpoint), UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: cfg.AccessKey, SecretAccessKey: cfg.SecretKey}, nil
		})})
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(cfg.Bucket)}); err != nil {
		t.Fatalf("create bucket on %s: %v\n%s", cfg.Endpoint, err, Hint)
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

// ProxiedBucket is Bucket reached through a fault proxy (closed when the
// test ends), so that a test can stall or cut the storage: cfg's Endpoint
// is the proxy's.
func ProxiedBucket(t testing.TB) (cfg s3.Config, p *faultproxy.Proxy) {
	t.Helper()
	cfg = Bucket(t)
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if p, err = faultproxy.Start(u.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	cfg.Endpoint = "http://" + p.Addr()
	return cfg, p
}

// Proxied opens ProxiedBucket's storage with responseTimeout as its
// ResponseTimeout (0: the default).
func Proxied(t testing.TB, responseTimeout time.Duration) (*s3.Storage, *faultproxy.Proxy) {
	t.Helper()
	cfg, p := ProxiedBucket(t)
	cfg.ResponseTimeout = responseTimeout
	s, err := s3.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}
