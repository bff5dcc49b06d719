// Package local stores media on the local disk (default under
// ./agentry-data/media): one file per key, written atomically.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentryhq/agentry/media"
)

// Storage is a directory of media objects.
type Storage struct {
	root string
}

var _ media.Storage = (*Storage)(nil)

// New returns a Storage under dir, creating it.
func New(dir string) (*Storage, error) {
	if dir == "" {
		return nil, errors.New("media/local: a directory is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return nil, fmt.Errorf("media/local: %w", err)
	}
	return &Storage{root: abs}, nil
}

// path maps a key to a file under root, refusing anything that would leave
// it or is not a key (media.CheckKey).
func (s *Storage) path(key string) (string, error) {
	if err := media.CheckKey(key); err != nil {
		return "", err
	}
	p := filepath.Join(s.root, filepath.FromSlash(key))
	if !strings.HasPrefix(p, s.root+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: %q", media.ErrInvalidKey, key)
	}
	return p, nil
}

// Upload writes the object to a temp file, syncs it and renames it into
// place (syncing the directory), so a failed upload leaves nothing behind and
// a stored object survives a power cut whole. A disk failure is
// media.ErrUnavailable.
func (s *Storage) Upload(ctx context.Context, key string, r io.Reader, size int64, _ string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := s.upload(ctx, p, r, size); err != nil {
		return fmt.Errorf("%w: media/local: upload %s: %w", media.ErrUnavailable, key, err)
	}
	return nil
}

func (s *Storage) upload(ctx context.Context, p string, r io.Reader, size int64) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".upload-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, r)
	if err == nil {
		// On disk before the rename: after a power cut the key must not
		// name an empty file, which Exists would report and media.Put
		// would then never upload again.
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && size >= 0 && n != size {
		err = fmt.Errorf("wrote %d bytes, expected %d", n, size)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return err
	}
	return syncDir(filepath.Dir(p))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Download opens the object: media.ErrNotFound when there is none,
// media.ErrUnavailable when the disk cannot answer (I/O or permission
// errors, a directory or anything but a regular file under the key).
func (s *Storage) Download(_ context.Context, key string) (io.ReadCloser, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", media.ErrNotFound, key)
	}
	if err == nil {
		err = regular(f.Stat())
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: media/local: open %s: %w", media.ErrUnavailable, key, err)
	}
	return f, nil
}

// errNotRegular: something other than a file is where an object should be.
var errNotRegular = errors.New("not a regular file")

// regular is nil for a regular file's info, the error otherwise.
func regular(fi fs.FileInfo, err error) error {
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%w (%s)", errNotRegular, fi.Mode().Type())
	}
	return err
}

// URL is "": local files are served by the media route, not signed.
func (s *Storage) URL(context.Context, string, time.Duration) (string, error) { return "", nil }

// Delete removes the object.
func (s *Storage) Delete(_ context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: media/local: delete %s: %w", media.ErrUnavailable, key, err)
	}
	return nil
}

// DeletePrefix removes the directory of the prefix's objects; a file where
// that directory would be is an object outside the prefix and stays.
func (s *Storage) DeletePrefix(_ context.Context, prefix string) error {
	if err := media.CheckPrefix(prefix); err != nil {
		return err
	}
	p, err := s.path(strings.TrimSuffix(prefix, "/"))
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
		// An object whose key is the prefix without its "/": no key
		// starts with the prefix, and this one does not either.
		return nil
	}
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("%w: media/local: delete %s: %w", media.ErrUnavailable, prefix, err)
	}
	return nil
}

// Exists reports whether the object exists; a key the disk cannot answer
// for (see Download) is media.ErrUnavailable.
func (s *Storage) Exists(_ context.Context, key string) (bool, error) {
	p, err := s.path(key)
	if err != nil {
		return false, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err := regular(fi, err); err != nil {
		return false, fmt.Errorf("%w: media/local: stat %s: %w", media.ErrUnavailable, key, err)
	}
	return true, nil
}

// Backend is "local".
func (s *Storage) Backend() string { return "local" }

// Bucket is "".
func (s *Storage) Bucket() string { return "" }
