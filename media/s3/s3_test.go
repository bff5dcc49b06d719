package s3_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"

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
