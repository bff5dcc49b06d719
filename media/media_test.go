package media_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/local"
)

func newLocal(t *testing.T) *local.Storage {
	t.Helper()
	s, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The MIME tables a machine has (/etc/mime.types, the freedesktop globs)
// map some types only to extensions that are not a key's (".7z.001" is
// the last of application/x-7z-compressed's on Debian): such content is
// stored without an extension, never refused.
func TestPut_ATypeWhoseExtensionIsNoKeyNameIsStoredWithoutOne(t *testing.T) {
	t.Parallel()
	const typ = "application/x-agentry-test-split-archive"
	if err := mime.AddExtensionType(".agentry-test.001", typ); err != nil {
		t.Fatal(err)
	}
	s := newLocal(t)
	owner := media.Owner{DB: "db", User: "alice", Session: "s1"}
	content := []byte("7z archive part")
	for _, name := range []string{"", "archive", "archive.7z.001-part"} {
		ref, err := media.Put(context.Background(), s, owner, "file", typ, name, content)
		if err != nil {
			t.Fatalf("Put(%q): %v", name, err)
		}
		if ref.MediaID != ref.ContentHash {
			t.Fatalf("Put(%q) named the object %s", name, ref.MediaID)
		}
		if got, err := media.Get(context.Background(), s, ref); err != nil || !bytes.Equal(got, content) {
			t.Fatalf("Get: %q, %v", got, err)
		}
	}
	// one of the type's extensions that a name may end in is taken
	const split = "application/x-agentry-test-split"
	for _, ext := range []string{".agentrysp", ".agentrysp.001"} {
		if err := mime.AddExtensionType(ext, split); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := media.Put(context.Background(), s, owner, "file", split, "", content)
	if err != nil || ref.MediaID != ref.ContentHash+".agentrysp" {
		t.Fatalf("Put: %+v, %v", ref, err)
	}
}

// countingStorage is a real local storage whose downloads count the bytes
// read from them.
type countingStorage struct {
	*local.Storage
	read atomic.Int64
}

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}

func (s *countingStorage) Download(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := s.Storage.Download(ctx, key)
	if err != nil {
		return nil, err
	}
	return countingReader{rc, &s.read}, nil
}

// A reference says how big its object is: an object that has grown past
// that (replaced, corrupted, or a reference naming another object) is
// refused after reading one byte more than the reference's size, not read
// whole into memory first.
func TestGet_ReadsNoMoreThanTheReferencedSizeAndABit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &countingStorage{Storage: newLocal(t)}
	owner := media.Owner{DB: "db", User: "alice", Session: "s1"}
	small := []byte("small")
	ref, err := media.Put(ctx, s, owner, "file", "text/plain", "a.txt", small)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("B"), 4<<20)
	if err := s.Upload(ctx, ref.StorageKey, bytes.NewReader(big), int64(len(big)), "text/plain"); err != nil {
		t.Fatal(err)
	}
	s.read.Store(0)
	_, err = media.Get(ctx, s, ref)
	if err == nil || !strings.Contains(err.Error(), ref.StorageKey) {
		t.Fatalf("Get of a grown object: %v", err)
	}
	if n := s.read.Load(); n > ref.Size+1 {
		t.Fatalf("Get read %d bytes of an object referenced as %d", n, ref.Size)
	}
	// the object as referenced still reads
	sum := sha256.Sum256(big)
	ref.Size, ref.ContentHash = int64(len(big)), hex.EncodeToString(sum[:])
	if got, err := media.Get(ctx, s, ref); err != nil || len(got) != len(big) {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}
}

// A key with a control character names an object an S3-compatible server
// lists under another name (U+FFFD), so DeletePrefix could not remove it:
// refused like a NUL.
func TestCheckKey_RefusesControlCharacters(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"a/\x01b.jpg", "a/b\x1f", "a/\tb", "a/b\x7f.png", "a\nb/c"} {
		if err := media.CheckKey(k); !errors.Is(err, media.ErrInvalidKey) {
			t.Errorf("CheckKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	for _, k := range []string{"a/b.jpg", "0123abcd/ü é.png", "a/b c+d%20.txt"} {
		if err := media.CheckKey(k); err != nil {
			t.Errorf("CheckKey(%q) = %v, want nil", k, err)
		}
	}
}
