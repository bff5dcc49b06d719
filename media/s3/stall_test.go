package s3_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/s3/s3test"
)

// An S3 server that accepts requests and then stops answering (an
// overloaded MinIO, a half-dead load balancer) fails each call as
// unavailable after ResponseTimeout. Every call used to wait for ever
// under a context without a deadline (a run's, a background job's),
// holding the run, its session line and its connection.
func TestS3_StalledServerIsUnavailableNotAHang(t *testing.T) {
	t.Parallel()
	s, p := s3test.Proxied(t, time.Second)
	ctx := context.Background()
	if err := s.Upload(ctx, "a/kept", bytes.NewReader([]byte("x")), 1, ""); err != nil {
		t.Fatal(err)
	}
	p.Stall()
	for name, call := range map[string]func() error{
		"Upload": func() error { return s.Upload(ctx, "a/b", bytes.NewReader([]byte("x")), 1, "") },
		"Exists": func() error { _, err := s.Exists(ctx, "a/kept"); return err },
		"Download": func() error {
			rc, err := s.Download(ctx, "a/kept")
			if err == nil {
				_, err = io.ReadAll(rc)
				rc.Close()
			}
			return err
		},
		"Delete":       func() error { return s.Delete(ctx, "a/kept") },
		"DeletePrefix": func() error { return s.DeletePrefix(ctx, "a/") },
	} {
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- call() }()
		select {
		case err := <-done:
			if !errors.Is(err, media.ErrUnavailable) {
				t.Errorf("%s on a stalled server: %v, want ErrUnavailable", name, err)
			}
			t.Logf("%s failed after %s", name, time.Since(start).Round(time.Millisecond))
		case <-time.After(30 * time.Second):
			t.Fatalf("%s on a stalled server is still waiting after 30 s", name)
		}
	}
	// Restore forwards the held requests too (the deletes may land): the
	// storage works again, on new connections.
	p.Restore()
	// The held upload of a/b lands late; the bucket's cleanup lists once.
	t.Cleanup(func() {
		for range 10 {
			if ok, _ := s.Exists(ctx, "a/b"); ok {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		s.Delete(ctx, "a/b")
	})
	// Under another prefix than the held calls': versitygw's file-system
	// backend removes a directory a delete left empty, and a PutObject of
	// a/after beside the held delete of a/kept then found no a/ to link
	// into, which it answers "ExistingObjectIsDirectory" (409; seen in CI).
	if err := s.Upload(ctx, "c/after", bytes.NewReader([]byte("x")), 1, ""); err != nil {
		t.Fatalf("upload after the stall: %v", err)
	}
	if ok, err := s.Exists(ctx, "c/after"); !ok || err != nil {
		t.Fatalf("after the stall: exists = %v, %v", ok, err)
	}
}

// A download whose server stops sending halfway fails the read as
// unavailable after ResponseTimeout without data; it used to wait for
// ever (media.Get reads a stored image back under the run's context).
func TestS3_DownloadStalledHalfwayIsUnavailableNotAHang(t *testing.T) {
	t.Parallel()
	s, p := s3test.Proxied(t, time.Second)
	ctx := context.Background()
	// Larger than every socket buffer between the server and the reader.
	big := bytes.Repeat([]byte("0123456789abcdef"), 4<<20)
	if err := s.Upload(ctx, "big", bytes.NewReader(big), int64(len(big)), ""); err != nil {
		t.Fatal(err)
	}
	rc, err := s.Download(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, make([]byte, 1<<10)); err != nil {
		t.Fatal(err)
	}
	p.Stall()
	defer p.Restore()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, rc)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, media.ErrUnavailable) {
			t.Fatalf("reading a stalled download: %v, want ErrUnavailable", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reading a stalled download is still waiting after 30 s")
	}
	// A download read at the reader's own pace is not cut.
	p.Restore()
	rc2, err := s.Download(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer rc2.Close()
	n := 0
	buf := make([]byte, 1<<20)
	for i := 0; ; i++ {
		if i == 2 {
			time.Sleep(1500 * time.Millisecond) // the caller is slow, not the server
		}
		m, err := rc2.Read(buf)
		n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("slow reader after %d bytes: %v", n, err)
		}
	}
	if n != len(big) {
		t.Fatalf("read %d bytes, want %d", n, len(big))
	}
}

// An upload to a server that stops taking the body (its socket buffers
// full) fails as unavailable after ResponseTimeout without a read of the
// body; it waited for ever, since ResponseTimeout (the transport's
// ResponseHeaderTimeout) starts only once the body is sent.
func TestS3_UploadToAServerThatStopsTakingTheBodyIsUnavailableNotAHang(t *testing.T) {
	t.Parallel()
	s, p := s3test.Proxied(t, time.Second)
	ctx := context.Background()
	if err := s.Upload(ctx, "first", bytes.NewReader([]byte("x")), 1, ""); err != nil {
		t.Fatal(err)
	}
	p.Stall()
	defer p.Restore()
	// Larger than every socket buffer between the uploader and the proxy.
	big := bytes.Repeat([]byte("0123456789abcdef"), 4<<20)
	done := make(chan error, 1)
	go func() { done <- s.Upload(ctx, "big", bytes.NewReader(big), int64(len(big)), "") }()
	select {
	case err := <-done:
		if !errors.Is(err, media.ErrUnavailable) || !strings.Contains(err.Error(), "took no data") {
			t.Fatalf("uploading to a stalled server: %v, want ErrUnavailable (the server took no data)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("uploading to a stalled server is still waiting after 30 s")
	}
}
