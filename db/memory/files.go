package memory

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

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
	return d.fileCopy(ctx, namespace, path, cloneFile)
}

// StatFile returns a file without its content, or ErrNotFound.
func (d *Driver) StatFile(ctx context.Context, namespace, path string) (*db.File, error) {
	return d.fileCopy(ctx, namespace, path, func(f *db.File) *db.File {
		cp := *f
		cp.Content = nil
		return &cp
	})
}

// fileCopy returns cp of the stored file, read under the driver's read
// lock, or ErrNotFound.
func (d *Driver) fileCopy(ctx context.Context, namespace, path string, cp func(*db.File) *db.File) (*db.File, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	f, ok := d.files[fileKey{namespace, path}]
	if !ok {
		return nil, fmt.Errorf("%w: file %s/%s", db.ErrNotFound, namespace, path)
	}
	return cp(f), nil
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

// PutFileIfVersion writes a file when its stored version is version (0: when
// it does not exist); db.ErrVersionConflict otherwise.
func (d *Driver) PutFileIfVersion(ctx context.Context, f *db.File, version int64) (*db.File, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	k := fileKey{f.Namespace, f.Path}
	old, ok := d.files[k]
	var have int64
	if ok {
		have = old.Version
	}
	if have != version {
		return nil, fmt.Errorf("%w: %s/%s is at version %d, not %d", db.ErrVersionConflict, f.Namespace, f.Path, have, version)
	}
	cp := cloneFile(f)
	cp.Version = version + 1
	if ok {
		cp.CreatedAt = old.CreatedAt
	}
	d.files[k] = cp
	return cloneFile(cp), nil
}

// ListFiles returns a namespace's files under a prefix, by path, without
// content.
func (d *Driver) ListFiles(ctx context.Context, namespace, prefix string) ([]db.File, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []db.File
	for k, f := range d.files {
		if k.namespace == namespace && strings.HasPrefix(k.path, prefix) {
			cp := *f
			cp.Content = nil
			out = append(out, cp)
		}
	}
	slices.SortFunc(out, func(a, b db.File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// FileUsage sums a namespace's file sizes.
func (d *Driver) FileUsage(ctx context.Context, namespace string) (db.FileUsage, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return db.FileUsage{}, err
	}
	defer unlock()
	var u db.FileUsage
	for k, f := range d.files {
		if k.namespace == namespace {
			u.Bytes += f.SizeBytes
			u.Files++
		}
	}
	return u, nil
}

// DeleteFilesBefore deletes old files of the namespaces under a prefix.
func (d *Driver) DeleteFilesBefore(ctx context.Context, namespacePrefix string, updatedBefore int64) (int64, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	var n int64
	for k, f := range d.files {
		if strings.HasPrefix(k.namespace, namespacePrefix) && f.UpdatedAt < updatedBefore {
			delete(d.files, k)
			n++
		}
	}
	return n, nil
}

// PutFileWithinQuota writes a file when its namespace then holds at most
// q.MaxBytes and q.MaxFiles; the check and the write share the driver's write lock.
func (d *Driver) PutFileWithinQuota(ctx context.Context, f *db.File, q db.FileQuota) (*db.File, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	k := fileKey{f.Namespace, f.Path}
	old, exists := d.files[k]
	var have, oldSize int64
	if exists {
		have, oldSize = old.Version, old.SizeBytes
	}
	if q.IfVersion != nil && have != *q.IfVersion {
		return nil, fmt.Errorf("%w: %s/%s is at version %d, not %d", db.ErrVersionConflict, f.Namespace, f.Path, have, *q.IfVersion)
	}
	var used int64
	var files int
	for k, g := range d.files {
		if k.namespace == f.Namespace {
			used += g.SizeBytes
			files++
		}
	}
	if !exists && q.MaxFiles > 0 && files >= q.MaxFiles {
		return nil, fmt.Errorf("%w: %s holds %d files, the limit is %d files", db.ErrNamespaceFull, f.Namespace, files, q.MaxFiles)
	}
	if after := used - oldSize + f.SizeBytes; after > q.MaxBytes {
		return nil, fmt.Errorf("%w: %s would hold %d bytes, the quota is %d", db.ErrNamespaceFull, f.Namespace, after, q.MaxBytes)
	}
	cp := cloneFile(f)
	cp.Version = have + 1
	if exists {
		cp.CreatedAt = old.CreatedAt
	}
	d.files[k] = cp
	return cloneFile(cp), nil
}
