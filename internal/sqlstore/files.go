package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

const fileCols = "namespace, path, content, size_bytes, version, created_at, updated_at"

// PutFile inserts a file at version 1, or replaces its content and bumps its
// version, in one statement; the stored row is read back.
func (s *Store) PutFile(ctx context.Context, f *db.File) (*db.File, error) {
	args := []any{f.Namespace, f.Path, f.Content, f.SizeBytes, int64(1), f.CreatedAt, f.UpdatedAt}
	var q string
	switch s.d.Upsert {
	case OnDuplicateKey:
		q = "INSERT INTO " + s.fs + " (" + fileCols + ") VALUES (" + placeholders(7) + `)
			ON DUPLICATE KEY UPDATE content = VALUES(content), size_bytes = VALUES(size_bytes),
			version = version + 1, updated_at = VALUES(updated_at)`
	default:
		target, cur := s.fs+" AS f", "f"
		q = "INSERT INTO " + target + " (" + fileCols + ") VALUES (" + placeholders(7) + `)
			ON CONFLICT (namespace, path) DO UPDATE SET content = excluded.content, size_bytes = excluded.size_bytes,
			version = ` + cur + ".version + 1, updated_at = excluded.updated_at"
	}
	if err := s.gate.enter(ctx); err != nil {
		return nil, err
	}
	_, err := s.w.ExecContext(ctx, s.d.Bind(q), args...)
	s.gate.leave()
	if err != nil {
		return nil, s.fail("put file "+f.Namespace+"/"+f.Path, err)
	}
	return s.getFile(ctx, s.w, f.Namespace, f.Path)
}

// GetFile returns a file or ErrNotFound.
func (s *Store) GetFile(ctx context.Context, namespace, path string) (*db.File, error) {
	return s.getFile(ctx, s.r, namespace, path)
}

func (s *Store) getFile(ctx context.Context, q *sql.DB, namespace, path string) (*db.File, error) {
	var f db.File
	var updated sql.NullInt64
	err := q.QueryRowContext(ctx, s.d.Bind("SELECT "+fileCols+" FROM "+s.fs+" WHERE namespace = ? AND path = ?"), namespace, path).
		Scan(&f.Namespace, &f.Path, &f.Content, &f.SizeBytes, &f.Version, &f.CreatedAt, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: file %s/%s", db.ErrNotFound, namespace, path)
	}
	if err != nil {
		return nil, s.fail("get file "+namespace+"/"+path, err)
	}
	if f.Content == nil {
		f.Content = []byte{}
	}
	f.UpdatedAt = updated.Int64
	return &f, nil
}

// DeleteFile deletes a file; a missing file is not an error.
func (s *Store) DeleteFile(ctx context.Context, namespace, path string) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	_, err := s.w.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.fs+" WHERE namespace = ? AND path = ?"), namespace, path)
	return s.fail("delete file "+namespace+"/"+path, err)
}
