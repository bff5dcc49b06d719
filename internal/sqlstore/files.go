package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

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
	var updated looseNull
	err := q.QueryRowContext(ctx, s.d.Bind("SELECT "+fileCols+" FROM "+s.fs+" WHERE namespace = ? AND path = ?"), namespace, path).
		Scan(&f.Namespace, &f.Path, &f.Content, &f.SizeBytes, &f.Version, intCol{&f.CreatedAt}, &updated)
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

// StatFile returns a file without its content, or ErrNotFound: one row read
// by the primary key.
func (s *Store) StatFile(ctx context.Context, namespace, path string) (*db.File, error) {
	var f db.File
	var updated looseNull
	err := s.r.QueryRowContext(ctx, s.d.Bind(statFileQuery(s.fs)), namespace, path).
		Scan(&f.Namespace, &f.Path, &f.SizeBytes, &f.Version, intCol{&f.CreatedAt}, &updated)
	// MySQL's = pads with spaces: a row another writer stored as "a " is
	// not the file "a" (this project refuses keys ending in a space)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (f.Namespace != namespace || f.Path != path)) {
		return nil, fmt.Errorf("%w: file %s/%s", db.ErrNotFound, namespace, path)
	}
	if err != nil {
		return nil, s.fail("stat file "+namespace+"/"+path, err)
	}
	f.UpdatedAt = updated.Int64
	return &f, nil
}

// statFileQuery is StatFile's statement on the file table fs.
func statFileQuery(fs string) string {
	return "SELECT namespace, path, size_bytes, version, created_at, updated_at FROM " + fs + " WHERE namespace = ? AND path = ?"
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

// PutFileIfVersion writes a file only at the expected version: an INSERT
// that must not conflict for version 0, else an UPDATE guarded by the
// version. Either way one statement decides, so concurrent writers cannot
// both win.
func (s *Store) PutFileIfVersion(ctx context.Context, f *db.File, version int64) (*db.File, error) {
	if err := s.gate.enter(ctx); err != nil {
		return nil, err
	}
	var written bool
	var err error
	if version == 0 {
		q := s.d.InsertIgnore(s.fs, splitCols(fileCols), "namespace", "path")
		written, err = s.d.Inserted(s.w.ExecContext(ctx, s.d.Bind(q), f.Namespace, f.Path, f.Content, f.SizeBytes, int64(1), f.CreatedAt, f.UpdatedAt))
	} else {
		var res sql.Result
		res, err = s.w.ExecContext(ctx, s.d.Bind("UPDATE "+s.fs+` SET content = ?, size_bytes = ?, version = version + 1, updated_at = ?
			WHERE namespace = ? AND path = ? AND version = ?`), f.Content, f.SizeBytes, f.UpdatedAt, f.Namespace, f.Path, version)
		if err == nil {
			var n int64
			n, err = res.RowsAffected()
			written = n > 0
		}
	}
	s.gate.leave()
	if err != nil {
		return nil, s.fail("put file "+f.Namespace+"/"+f.Path, err)
	}
	if !written {
		return nil, fmt.Errorf("%w: %s/%s is not at version %d", db.ErrVersionConflict, f.Namespace, f.Path, version)
	}
	return s.getFile(ctx, s.w, f.Namespace, f.Path)
}

// ListFiles returns a namespace's files under a path prefix, without content.
func (s *Store) ListFiles(ctx context.Context, namespace, prefix string) ([]db.File, error) {
	q := "SELECT namespace, path, size_bytes, version, created_at, updated_at FROM " + s.fs + " WHERE namespace = ?"
	args := []any{namespace}
	if prefix != "" {
		q += " AND " + hasPrefix("path")
		args = append(args, prefixArgs(prefix)...)
	}
	rows, err := s.r.QueryContext(ctx, s.d.Bind(q+" ORDER BY path"), args...)
	if err != nil {
		return nil, s.fail("list files "+namespace, err)
	}
	defer rows.Close()
	var out []db.File
	for rows.Next() {
		var f db.File
		var updated looseNull
		if err := rows.Scan(&f.Namespace, &f.Path, &f.SizeBytes, &f.Version, intCol{&f.CreatedAt}, &updated); err != nil {
			return nil, s.fail("list files "+namespace, err)
		}
		f.UpdatedAt = updated.Int64
		out = append(out, f)
	}
	return out, s.fail("list files "+namespace, rows.Err())
}

// FileUsage sums a namespace's file sizes.
func (s *Store) FileUsage(ctx context.Context, namespace string) (db.FileUsage, error) {
	var u db.FileUsage
	err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COALESCE(SUM(size_bytes), 0), COUNT(*) FROM "+s.fs+" WHERE namespace = ?"), namespace).
		Scan(&u.Bytes, &u.Files)
	return u, s.fail("file usage "+namespace, err)
}

// DeleteFilesBefore deletes old files of the namespaces under a prefix. A
// write under a TTL runs it for its own namespace first, so it must not
// scan the table.
func (s *Store) DeleteFilesBefore(ctx context.Context, namespacePrefix string, updatedBefore int64) (int64, error) {
	if err := s.gate.enter(ctx); err != nil {
		return 0, err
	}
	defer s.gate.leave()
	q, args := deleteFilesBeforeQuery(s.d.Name, s.fs, namespacePrefix, updatedBefore)
	res, err := s.w.ExecContext(ctx, s.d.Bind(q), args...)
	if err != nil {
		return 0, s.fail("delete old files", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// deleteFilesBeforeQuery is DeleteFilesBefore's statement on the file table
// fs. substr(namespace, 1, n) = prefix alone scans the table (no index
// serves an expression); on SQLite and MySQL, whose file tables compare
// namespaces by code point (BINARY, utf8mb4_bin), a range of namespaces
// holding every one under the prefix comes first, for the primary key to
// serve. Postgres keeps the scan: its column compares in the database's
// collation, in which a prefix's namespaces need not be one range
// (en_US ignores "/": "agentfs/ab" sorts after "agentfs0").
func deleteFilesBeforeQuery(dialect, fs, namespacePrefix string, updatedBefore int64) (string, []any) {
	where, args := hasPrefix("namespace"), prefixArgs(namespacePrefix)
	if lo, hi, ok := prefixRange(namespacePrefix); ok && (dialect == "sqlite" || dialect == "mysql") {
		where = "namespace >= ? AND namespace < ? AND " + where
		args = append([]any{lo, hi}, args...)
	}
	return "DELETE FROM " + fs + " WHERE " + where + " AND COALESCE(updated_at, created_at) < ?", append(args, updatedBefore)
}

// prefixRange returns bounds lo <= s < hi holding every string s that
// starts with prefix, in code point order and also under MySQL's PAD SPACE
// (which compares "p" + "\t" below "p": lo is prefix cut before its last
// character above a space). ok is false when there are none to give (a
// prefix not UTF-8, without a character above a space, or of U+10FFFF
// only): the caller then filters without a range.
func prefixRange(prefix string) (lo, hi string, ok bool) {
	if !utf8.ValidString(prefix) {
		return "", "", false
	}
	cut := strings.LastIndexFunc(prefix, func(r rune) bool { return r > ' ' })
	if cut < 0 {
		return "", "", false
	}
	for end := len(prefix); end > 0; {
		r, size := utf8.DecodeLastRuneInString(prefix[:end])
		end -= size
		if r == utf8.MaxRune {
			continue
		}
		next := r + 1
		if next == 0xD800 { // no surrogates in UTF-8
			next = 0xE000
		}
		return prefix[:cut], prefix[:end] + string(next), true
	}
	return "", "", false
}
