package s3_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/s3"
	"github.com/agentryhq/agentry/media/s3/s3test"
)

// streamOnly hides every method of its reader but Read: a body from a
// network connection or a pipe, which cannot be rewound.
type streamOnly struct{ r io.Reader }

func (s streamOnly) Read(p []byte) (int, error) { return s.r.Read(p) }

// Upload takes any io.Reader and a size of -1 for an unknown length, as
// media/local does. Over a plain-HTTP endpoint (MinIO or versitygw on a
// private network) the SDK must hash the payload before it signs, so it
// refused a reader it cannot rewind ("unseekable stream is not supported
// without TLS"), and S3 refuses a PUT without a Content-Length (411).
func TestS3_UploadTakesAStreamOfUnknownLength(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := s3.New(ctx, s3test.Bucket(t))
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("stream "), 50_000)
	for _, c := range []struct {
		name string
		r    func() io.Reader
		size int64
	}{
		{"stream of known size", func() io.Reader { return streamOnly{bytes.NewReader(data)} }, int64(len(data))},
		{"stream of unknown size", func() io.Reader { return streamOnly{bytes.NewReader(data)} }, -1},
		{"seekable of unknown size", func() io.Reader { return bytes.NewReader(data) }, -1},
		{"pipe", func() io.Reader {
			pr, pw := io.Pipe()
			go func() { pw.CloseWithError(func() error { _, err := pw.Write(data); return err }()) }()
			return pr
		}, int64(len(data))},
	} {
		key := "streams/" + c.name
		if err := s.Upload(ctx, key, c.r(), c.size, "text/plain"); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		rc, err := s.Download(ctx, key)
		if err != nil {
			t.Errorf("%s: download: %v", c.name, err)
			continue
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: read back %d bytes (%v), want %d", c.name, len(got), err, len(data))
		}
	}
}

// A body shorter or longer than the size given is an error that stores
// nothing, as on media/local, whether or not the reader can be rewound.
func TestS3_UploadOfTheWrongSizeStoresNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := s3.New(ctx, s3test.Bucket(t))
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("x"), 1000)
	for _, c := range []struct {
		name string
		r    io.Reader
		size int64
	}{
		{"short stream", streamOnly{bytes.NewReader(data)}, 2000},
		{"long stream", streamOnly{bytes.NewReader(data)}, 10},
		{"short seekable", bytes.NewReader(data), 2000},
		{"long seekable", bytes.NewReader(data), 10},
	} {
		key := "sizes/" + c.name
		if err := s.Upload(ctx, key, c.r, c.size, ""); !errors.Is(err, media.ErrUnavailable) {
			t.Errorf("%s: Upload = %v, want ErrUnavailable", c.name, err)
		}
		if ok, err := s.Exists(ctx, key); ok || err != nil {
			t.Errorf("%s: stored anyway (%v)", c.name, err)
		}
	}
}
