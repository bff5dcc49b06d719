package db

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// File is one row of the file table (agno_fs, Agno's AgentFS): an opaque
// document stored under a namespace and a path. The table has no owner
// column, so the user scope does not apply to files: a caller that needs an
// owner keeps it in the content and checks it (codemode's snapshots do).
type File struct {
	Namespace string
	Path      string
	Content   []byte
	// SizeBytes is len(Content), set on write.
	SizeBytes int64
	// Version is 1 after the first write and grows by one on every later write.
	Version   int64
	CreatedAt int64
	UpdatedAt int64
}

// FileDriver stores files, one row per (namespace, path).
type FileDriver interface {
	// PutFile inserts or replaces a file's content and returns the stored row
	// (its version incremented on replace; created_at kept).
	PutFile(ctx context.Context, f *File) (*File, error)
	// GetFile returns a file or ErrNotFound.
	GetFile(ctx context.Context, namespace, path string) (*File, error)
	// StatFile returns one file without its content, or ErrNotFound: a
	// lookup of the (namespace, path) key, never a listing.
	StatFile(ctx context.Context, namespace, path string) (*File, error)
	// DeleteFile deletes a file; a missing file is not an error.
	DeleteFile(ctx context.Context, namespace, path string) error
	// PutFileIfVersion writes a file only when its stored version is
	// version (0: only when it does not exist), in one statement; otherwise
	// ErrVersionConflict.
	PutFileIfVersion(ctx context.Context, f *File, version int64) (*File, error)
	// ListFiles returns the files of a namespace whose path starts with
	// prefix, by path, without their content.
	ListFiles(ctx context.Context, namespace, prefix string) ([]File, error)
	// FileUsage sums the sizes and counts the files of a namespace.
	FileUsage(ctx context.Context, namespace string) (FileUsage, error)
	// DeleteFilesBefore deletes the files of the namespaces starting with
	// namespacePrefix last written before updatedBefore (Unix seconds) and
	// returns how many it deleted.
	DeleteFilesBefore(ctx context.Context, namespacePrefix string, updatedBefore int64) (int64, error)
}

// FileUsage is what a namespace holds.
type FileUsage struct {
	Bytes int64
	Files int
}

// ErrVersionConflict: a conditional write found another version than the one
// it expected (someone wrote the file in between); read it again and retry.
var ErrVersionConflict = errors.New("db: file version conflict")

// Limits of the file table's key columns (MySQL indexes VARCHARs).
const (
	MaxFileNamespace = 128
	MaxFilePath      = 512
)

func checkFileKey(namespace, path string) error {
	switch {
	case namespace == "" || path == "":
		return fmt.Errorf("%w: a file needs a namespace and a path", ErrInvalidRecord)
	case len(namespace) > MaxFileNamespace || len(path) > MaxFilePath:
		return fmt.Errorf("%w: file namespace is limited to %d bytes and path to %d", ErrInvalidRecord, MaxFileNamespace, MaxFilePath)
	case !utf8.ValidString(namespace) || !utf8.ValidString(path):
		return fmt.Errorf("%w: file namespace and path must be UTF-8", ErrInvalidRecord)
	case strings.HasSuffix(namespace, " "):
		return checkNotPadded("file namespace", namespace)
	case strings.HasSuffix(path, " "):
		return checkNotPadded("file path", path)
	}
	return nil
}

// PutFile validates and stores a file.
func (d *DB) PutFile(ctx context.Context, f *File) (*File, error) {
	if f == nil {
		return nil, fmt.Errorf("%w: nil file", ErrInvalidRecord)
	}
	if err := checkFileKey(f.Namespace, f.Path); err != nil {
		return nil, err
	}
	cp := *f
	cp.SizeBytes = int64(len(cp.Content))
	now := d.now().Unix()
	if cp.CreatedAt == 0 {
		cp.CreatedAt = now
	}
	cp.UpdatedAt = now
	ctx, call := d.bound(ctx)
	out, err := d.driver.PutFile(ctx, &cp)
	return out, call.done(err)
}

// GetFile returns a file or ErrNotFound.
func (d *DB) GetFile(ctx context.Context, namespace, path string) (*File, error) {
	if err := checkFileKey(namespace, path); err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := d.driver.GetFile(ctx, namespace, path)
	return out, call.done(err)
}

// StatFile returns a file's description (Content nil) or ErrNotFound,
// reading one row by its key: ListFiles with the path as prefix reads every
// file under it ("d" lists the whole of "d/").
func (d *DB) StatFile(ctx context.Context, namespace, path string) (*File, error) {
	if err := checkFileKey(namespace, path); err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := d.driver.StatFile(ctx, namespace, path)
	return out, call.done(err)
}

// DeleteFile deletes a file; a missing file is not an error. Any key of
// UTF-8 text is taken, including those PutFile refuses (empty, or over
// MaxFileNamespace / MaxFilePath): another writer sharing the database (a
// Python Agno process) may have stored one, and an index row naming it
// (the offload sweep's) must be able to delete it.
func (d *DB) DeleteFile(ctx context.Context, namespace, path string) error {
	if !utf8.ValidString(namespace) || !utf8.ValidString(path) {
		return fmt.Errorf("%w: file namespace and path must be UTF-8", ErrInvalidRecord)
	}
	ctx, call := d.bound(ctx)
	return call.done(d.driver.DeleteFile(ctx, namespace, path))
}

// PutFileIfVersion validates and stores a file when its stored version is
// version (0: when it does not exist yet); ErrVersionConflict otherwise.
func (d *DB) PutFileIfVersion(ctx context.Context, f *File, version int64) (*File, error) {
	if f == nil {
		return nil, fmt.Errorf("%w: nil file", ErrInvalidRecord)
	}
	if err := checkFileKey(f.Namespace, f.Path); err != nil {
		return nil, err
	}
	if version < 0 {
		return nil, fmt.Errorf("%w: expected file version must be >= 0, got %d", ErrInvalidRecord, version)
	}
	cp := *f
	cp.SizeBytes = int64(len(cp.Content))
	now := d.now().Unix()
	cp.CreatedAt, cp.UpdatedAt = now, now
	ctx, call := d.bound(ctx)
	out, err := d.driver.PutFileIfVersion(ctx, &cp, version)
	return out, call.done(err)
}

// ListFiles returns a namespace's files under a path prefix, without content.
func (d *DB) ListFiles(ctx context.Context, namespace, prefix string) ([]File, error) {
	if err := checkFileKey(namespace, "-"); err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := d.driver.ListFiles(ctx, namespace, prefix)
	return out, call.done(err)
}

// FileUsage returns the bytes and files a namespace holds.
func (d *DB) FileUsage(ctx context.Context, namespace string) (FileUsage, error) {
	if err := checkFileKey(namespace, "-"); err != nil {
		return FileUsage{}, err
	}
	ctx, call := d.bound(ctx)
	out, err := d.driver.FileUsage(ctx, namespace)
	return out, call.done(err)
}

// DeleteFilesBefore deletes the files of the namespaces starting with
// namespacePrefix (not empty) last written before updatedBefore.
func (d *DB) DeleteFilesBefore(ctx context.Context, namespacePrefix string, updatedBefore int64) (int64, error) {
	if namespacePrefix == "" {
		return 0, fmt.Errorf("%w: deleting old files needs a namespace prefix", ErrInvalidRecord)
	}
	ctx, call := d.bound(ctx)
	n, err := d.driver.DeleteFilesBefore(ctx, namespacePrefix, updatedBefore)
	return n, call.done(err)
}

// ErrNamespaceFull: a quota write would take its namespace over the
// quota; nothing was written.
var ErrNamespaceFull = errors.New("db: file namespace quota exceeded")

// FileQuota makes PutFileWithinQuota a checked write.
type FileQuota struct {
	// MaxBytes caps the sum of the namespace's file sizes after the write.
	MaxBytes int64
	// MaxFiles caps how many files the namespace holds after the write (a
	// rewrite of a file adds none); 0 sets no cap. Empty files cost no
	// bytes: without it a namespace could grow without bound.
	MaxFiles int
	// IfVersion, when set, writes only when the file's stored version is
	// this (0: only when it does not exist); ErrVersionConflict otherwise.
	IfVersion *int64
}

// QuotaFileDriver is the driver part that writes a file only while its
// namespace stays within a quota. The check and the write are one
// transaction under a lock on the namespace that every writer of the
// database takes (processes and connection pools alike), so concurrent
// writers cannot together exceed the quota.
type QuotaFileDriver interface {
	PutFileWithinQuota(ctx context.Context, f *File, q FileQuota) (*File, error)
}

// PutFileWithinQuota validates and stores a file when the namespace then
// holds at most q.MaxBytes (the file's old size is not counted) and, with
// q.MaxFiles, at most that many files; ErrNamespaceFull otherwise, and
// ErrVersionConflict as PutFileIfVersion.
func (d *DB) PutFileWithinQuota(ctx context.Context, f *File, q FileQuota) (*File, error) {
	if f == nil {
		return nil, fmt.Errorf("%w: nil file", ErrInvalidRecord)
	}
	if err := checkFileKey(f.Namespace, f.Path); err != nil {
		return nil, err
	}
	if q.MaxBytes <= 0 || q.MaxFiles < 0 || (q.IfVersion != nil && *q.IfVersion < 0) {
		return nil, fmt.Errorf("%w: a file quota must be positive, a file cap and an expected version >= 0", ErrInvalidRecord)
	}
	qd, ok := d.driver.(QuotaFileDriver)
	if !ok {
		return nil, fmt.Errorf("%w: the %T driver cannot enforce file quotas", ErrInvalidRecord, d.driver)
	}
	cp := *f
	cp.SizeBytes = int64(len(cp.Content))
	now := d.now().Unix()
	cp.CreatedAt, cp.UpdatedAt = now, now
	ctx, call := d.bound(ctx)
	out, err := qd.PutFileWithinQuota(ctx, &cp, q)
	return out, call.done(err)
}
