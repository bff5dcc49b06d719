// Package s3 stores media in an S3-compatible bucket (AWS, MinIO,
// versitygw) through aws-sdk-go-v2, with presigned read URLs.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/agentryhq/agentry/media"
)

// Defaults of Config's zero values.
const (
	DefaultPrefix        = "agentry/media/"
	DefaultPresignExpiry = 3600 * time.Second
	// MaxPresignExpiry is the longest a signed URL S3 accepts is valid
	// (SigV4 query signing: 7 days).
	MaxPresignExpiry = 7 * 24 * time.Hour
	// DefaultResponseTimeout is how long a request waits for S3 to answer
	// once it is sent.
	DefaultResponseTimeout = 60 * time.Second
)

// ErrNoBucket: the configured bucket does not exist (or cannot be seen).
var ErrNoBucket = errors.New("media/s3: bucket does not exist")

// Config configures the bucket. Bucket is required.
type Config struct {
	Bucket string
	// Prefix is prepended to every key (default "agentry/media/"); it
	// must keep keys clean (media.CheckKey): no "..", "." or empty
	// segments, no leading "/", backslash or control character.
	Prefix string
	Region string
	// Endpoint, when set, is an S3-compatible server (e.g. MinIO); with it,
	// PathStyle is usually needed.
	Endpoint  string
	PathStyle bool
	// AccessKey and SecretKey, when set, are static credentials; otherwise
	// the AWS default chain (environment, profile, instance role) is used.
	AccessKey, SecretKey string
	// PresignExpiry bounds signed URLs (default 3600 s, at most
	// MaxPresignExpiry).
	PresignExpiry time.Duration
	// PublicRead uploads objects readable by anyone: references then carry
	// a plain URL instead of being presigned.
	PublicRead bool
	// ResponseTimeout bounds the wait for S3's answer (its response
	// headers) once a request, body included, is sent, and each read of a
	// download's body that gets no data (a slow reader is not cut): past
	// it the call fails as unavailable (default DefaultResponseTimeout).
	// A server that accepts requests and then stops answering would
	// otherwise hold every call whose context has no deadline for ever.
	// It does not bound sending an upload. With HTTPClient, only the
	// download reads are bounded (the client's own timeouts apply).
	ResponseTimeout time.Duration
	// HTTPClient, when set, is used for requests (tests; timeouts).
	HTTPClient *http.Client
}

// Storage is a bucket of media objects.
type Storage struct {
	cfg     Config
	client  *s3.Client
	presign *s3.PresignClient
}

var _ media.Storage = (*Storage)(nil)

// New connects and checks that the bucket exists (ErrNoBucket otherwise).
func New(ctx context.Context, cfg Config) (*Storage, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("media/s3: Config.Bucket is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	// Every object key is Prefix and a clean key (media.CheckKey): the
	// prefix must keep it clean. A server on a file system stores
	// "x/../y/k" as "y/k" and lists nothing under "x/../y/", so
	// DeletePrefix would find nothing to delete.
	if err := media.CheckKey(cfg.Prefix + "k"); err != nil {
		return nil, fmt.Errorf("media/s3: Config.Prefix %q must be relative and clean (no \"..\", \".\" or empty segments, no backslash or control character), e.g. %q: %w",
			cfg.Prefix, DefaultPrefix, media.ErrInvalidKey)
	}
	if cfg.PresignExpiry <= 0 {
		cfg.PresignExpiry = DefaultPresignExpiry
	}
	if cfg.PresignExpiry > MaxPresignExpiry {
		return nil, fmt.Errorf("media/s3: Config.PresignExpiry %s is longer than S3 accepts a signed URL (7 days)", cfg.PresignExpiry)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(cfg.Region)}
	if cfg.AccessKey != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")))
	}
	if cfg.ResponseTimeout <= 0 {
		cfg.ResponseTimeout = DefaultResponseTimeout
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, awsconfig.WithHTTPClient(cfg.HTTPClient))
	} else {
		opts = append(opts, awsconfig.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.ResponseHeaderTimeout = cfg.ResponseTimeout
		})))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("media/s3: %w", err)
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		o.RetryMaxAttempts = 2
	})
	s := &Storage{cfg: cfg, client: client, presign: s3.NewPresignClient(client)}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(cfg.Bucket)}); err != nil {
		if notFound(err) {
			return nil, fmt.Errorf("%w: %s", ErrNoBucket, cfg.Bucket)
		}
		return nil, fmt.Errorf("%w: media/s3: check bucket %s: %w", media.ErrUnavailable, cfg.Bucket, err)
	}
	return s, nil
}

func notFound(err error) bool {
	var nf *types.NotFound
	var nk *types.NoSuchKey
	var nb *types.NoSuchBucket
	if errors.As(err, &nf) || errors.As(err, &nk) || errors.As(err, &nb) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NotFound", "NoSuchKey", "NoSuchBucket", "404":
			return true
		}
	}
	return false
}

// key is the object key of a storage key (media.CheckKey) under Prefix.
func (s *Storage) key(key string) (string, error) {
	if err := media.CheckKey(key); err != nil {
		return "", err
	}
	return s.cfg.Prefix + key, nil
}

// Upload puts the object (public-read when configured). r need not be
// seekable and size may be -1 (unknown): such a body is first copied to a
// temporary file. A body of another length than size is an error that
// stores nothing.
func (s *Storage) Upload(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	body, size, done, err := rewindable(r, size)
	if err != nil {
		return fmt.Errorf("%w: media/s3: put %s: %w", media.ErrUnavailable, k, err)
	}
	defer done()
	in := &s3.PutObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(k), Body: body, ContentLength: aws.Int64(size)}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	if !media.Inline(contentType) {
		// The bucket serves the client's type: HTML or SVG shown inline
		// would run its scripts in the bucket's origin.
		in.ContentDisposition = aws.String("attachment")
	}
	if s.cfg.PublicRead {
		in.ACL = types.ObjectCannedACLPublicRead
	}
	// ResponseTimeout starts once the body is sent: a server that stops
	// taking it (its socket buffers full) would hold the upload for ever.
	// The body's reads must go on within ResponseTimeout instead.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sent := &sentBody{ReadSeeker: body, idle: s.cfg.ResponseTimeout}
	sent.watch = time.AfterFunc(sent.idle, func() { cancel(errStalled) })
	defer sent.watch.Stop()
	in.Body = sent
	if _, err := s.client.PutObject(ctx, in); err != nil {
		if errors.Is(context.Cause(ctx), errStalled) {
			return fmt.Errorf("%w: media/s3: put %s: the server took no data for %s", media.ErrUnavailable, k, s.cfg.ResponseTimeout)
		}
		return fmt.Errorf("%w: media/s3: put %s: %w", media.ErrUnavailable, k, err)
	}
	return nil
}

// sentBody is an upload's body whose reads (the SDK hashing it, the
// transport sending it) must follow each other within idle until its end.
type sentBody struct {
	io.ReadSeeker
	idle  time.Duration
	watch *time.Timer // cancels the request after idle without a read
}

func (b *sentBody) Read(p []byte) (int, error) {
	n, err := b.ReadSeeker.Read(p)
	if err == io.EOF {
		b.watch.Stop() // all sent: ResponseHeaderTimeout takes over
	} else {
		b.watch.Reset(b.idle)
	}
	return n, err
}

// Seek rewinds for a retry or the sending after the hashing: the watch
// starts again.
func (b *sentBody) Seek(off int64, whence int) (int64, error) {
	b.watch.Reset(b.idle)
	return b.ReadSeeker.Seek(off, whence)
}

// rewindable returns r as a body the SDK can send: one it can rewind
// (over plain HTTP it hashes the payload before signing, and a retry sends
// it again) of a known length (S3 refuses a PUT without Content-Length).
// A reader that cannot seek is copied to a temporary file, which done
// removes.
func rewindable(r io.Reader, size int64) (body io.ReadSeeker, n int64, done func(), err error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		// A pipe behind an *os.File fails the first Seek without moving:
		// it is read as a stream.
		if cur, err := rs.Seek(0, io.SeekCurrent); err == nil {
			end, err := rs.Seek(0, io.SeekEnd)
			if err == nil {
				_, err = rs.Seek(cur, io.SeekStart)
			}
			switch n = end - cur; {
			case err != nil:
				return nil, 0, nil, err
			case size >= 0 && n != size:
				return nil, 0, nil, fmt.Errorf("body is %d bytes, expected %d", n, size)
			}
			return rs, n, func() {}, nil
		}
	}
	f, err := os.CreateTemp("", "agentry-s3-upload-*")
	if err != nil {
		return nil, 0, nil, err
	}
	done = func() {
		f.Close()
		os.Remove(f.Name())
	}
	src := r
	if size >= 0 {
		// One byte past size tells a body too long.
		src = io.LimitReader(r, size+1)
	}
	n, err = io.Copy(f, src)
	switch {
	case err != nil:
	case size >= 0 && n > size:
		err = fmt.Errorf("body is longer than %d bytes", size)
	case size >= 0 && n < size:
		err = fmt.Errorf("body is %d bytes, expected %d", n, size)
	default:
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		done()
		return nil, 0, nil, err
	}
	return f, n, done, nil
}

// Download opens the object. A read that gets no data for
// ResponseTimeout fails as unavailable (a server that stopped sending
// halfway); a slow reader is not cut, only a silent server.
func (s *Storage) Download(ctx context.Context, key string) (io.ReadCloser, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	// The request's context governs reading the body too: cancelling it
	// is what ends a read blocked on a silent connection.
	ctx, cancel := context.WithCancelCause(ctx)
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(k)})
	if err != nil {
		cancel(nil)
		if notFound(err) {
			return nil, fmt.Errorf("%w: %s", media.ErrNotFound, key)
		}
		return nil, fmt.Errorf("%w: media/s3: get %s: %w", media.ErrUnavailable, k, err)
	}
	b := &watchedBody{body: out.Body, ctx: ctx, cancel: cancel, idle: s.cfg.ResponseTimeout, key: k}
	// One timer for every Read, armed only while a Read waits.
	b.watch = time.AfterFunc(b.idle, func() { cancel(errStalled) })
	b.watch.Stop()
	return b, nil
}

// errStalled cancels a download whose server stopped sending.
var errStalled = errors.New("no data")

// watchedBody is a download's body whose every Read must see data within
// idle.
type watchedBody struct {
	body   io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration
	watch  *time.Timer // cancels the request after idle without data
	key    string
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.watch.Reset(b.idle)
	n, err := b.body.Read(p)
	b.watch.Stop()
	if err != nil && err != io.EOF && errors.Is(context.Cause(b.ctx), errStalled) {
		err = fmt.Errorf("%w: media/s3: get %s: no data for %s", media.ErrUnavailable, b.key, b.idle)
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.watch.Stop()
	err := b.body.Close()
	b.cancel(nil)
	return err
}

// URL presigns a GET for expiry (PresignExpiry when zero; over
// MaxPresignExpiry is an error: S3 would refuse the URL); with PublicRead
// it is the object's plain URL.
func (s *Storage) URL(ctx context.Context, key string, expiry time.Duration) (string, error) {
	k, err := s.key(key)
	if err != nil {
		return "", err
	}
	if expiry <= 0 {
		expiry = s.cfg.PresignExpiry
	}
	if expiry > MaxPresignExpiry {
		return "", fmt.Errorf("media/s3: a signed URL for %s: S3 accepts at most 7 days", expiry)
	}
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(k)}, s3.WithPresignExpires(expiry))
	if err != nil {
		return "", fmt.Errorf("media/s3: presign %s: %w", k, err)
	}
	if s.cfg.PublicRead {
		u, _, _ := strings.Cut(req.URL, "?")
		return u, nil
	}
	return req.URL, nil
}

// Public reports whether references carry plain URLs.
func (s *Storage) Public() bool { return s.cfg.PublicRead }

// Delete removes the object.
func (s *Storage) Delete(ctx context.Context, key string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(k)}); err != nil && !notFound(err) {
		return fmt.Errorf("%w: media/s3: delete %s: %w", media.ErrUnavailable, k, err)
	}
	return nil
}

// DeletePrefix lists the objects under the prefix and deletes them, a
// page (up to 1,000 keys) at a time.
func (s *Storage) DeletePrefix(ctx context.Context, prefix string) error {
	if err := media.CheckPrefix(prefix); err != nil {
		return err
	}
	full := s.cfg.Prefix + prefix
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.cfg.Bucket), Prefix: aws.String(full)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("%w: media/s3: list %s: %w", media.ErrUnavailable, full, err)
		}
		if len(page.Contents) == 0 {
			continue
		}
		objs := make([]types.ObjectIdentifier, len(page.Contents))
		for i, o := range page.Contents {
			objs[i] = types.ObjectIdentifier{Key: o.Key}
		}
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(s.cfg.Bucket),
			Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("%w: media/s3: delete under %s: %w", media.ErrUnavailable, full, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("%w: media/s3: delete %s: %s %s (and %d more)", media.ErrUnavailable,
				aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message), len(out.Errors)-1)
		}
	}
	return nil
}

// Exists heads the object.
func (s *Storage) Exists(ctx context.Context, key string) (bool, error) {
	k, err := s.key(key)
	if err != nil {
		return false, err
	}
	_, err = s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(k)})
	if err == nil {
		return true, nil
	}
	if notFound(err) {
		return false, nil
	}
	return false, fmt.Errorf("%w: media/s3: head %s: %w", media.ErrUnavailable, k, err)
}

// Backend is "s3".
func (s *Storage) Backend() string { return "s3" }

// Bucket is the bucket name.
func (s *Storage) Bucket() string { return s.cfg.Bucket }
