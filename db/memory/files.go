package memory

import (
	"bytes"
	"context"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

type fileKey struct{ namespace, path string }

func cloneFile(f *db.File) *db.File {
	cp := *f
	cp.Content = bytes.Clone(f.Content)
	if cp.Content == nil {
		cp.Content = []byte{}
	}
	return &cp
}

// PutFile inserts a file at version 1 or replaces its content, bumping the
// version and keeping created_at.
func (d *Driver) PutFile(ctx context.Context, f *db.File) (*db.File, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	k := fileKey{f.Namespace, f.Path}
	cp := cloneFile(f)
	cp.Version = 1
	if old, ok := d.files[k]; ok {
		cp.Version, cp.CreatedAt = old.Version+1, old.CreatedAt
	}
	d.files[k] = cp
	return cloneFile(cp), nil
}

// GetFile returns a file or ErrNotFound.
func (d *Driver) GetFile(ctx context.Context, namespace, path string) (*db.File, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	f, ok := d.files[fileKey{namespace, path}]
	if !ok {
		return nil, fmt.Errorf("%w: file %s/%s", db.ErrNotFound, namespace, path)
	}
	return cloneFile(f), nil
}

// DeleteFile deletes a file; a missing file is not an error.
func (d *Driver) DeleteFile(ctx context.Context, namespace, path string) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	delete(d.files, fileKey{namespace, path})
	return nil
}
