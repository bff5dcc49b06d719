package db

import (
	"context"
	"fmt"
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
	// DeleteFile deletes a file; a missing file is not an error.
	DeleteFile(ctx context.Context, namespace, path string) error
}

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

// DeleteFile deletes a file; a missing file is not an error.
func (d *DB) DeleteFile(ctx context.Context, namespace, path string) error {
	if err := checkFileKey(namespace, path); err != nil {
		return err
	}
	ctx, call := d.bound(ctx)
	return call.done(d.driver.DeleteFile(ctx, namespace, path))
}
