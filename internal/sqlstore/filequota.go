package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

// PutFileWithinQuota writes a file only while its namespace stays within
// q.MaxBytes and q.MaxFiles. Every such write of a namespace takes the namespace's lock
// first (lockedTx). Under it, reading the usage and
// writing the file cannot interleave with another writer's, so processes and
// connection pools sharing the database cannot together pass the quota.
func (s *Store) PutFileWithinQuota(ctx context.Context, f *db.File, q db.FileQuota) (*db.File, error) {
	if err := s.gate.enter(ctx); err != nil {
		return nil, err
	}
	defer s.gate.leave()
	var out *db.File
	err := s.lockedTx(ctx, quotaLockKey(f.Namespace), func(ctx context.Context, tx *sql.Tx) error {
		if err := s.putWithinQuota(ctx, tx, f, q); err != nil {
			return err
		}
		var err error
		out, err = s.getFileTx(ctx, tx, f.Namespace, f.Path)
		return err
	})
	if errors.Is(err, db.ErrNamespaceFull) || errors.Is(err, db.ErrVersionConflict) {
		return nil, err
	}
	if err != nil {
		return nil, s.fail("put file "+f.Namespace+"/"+f.Path, err)
	}
	return out, nil
}

// quotaLockKey names a namespace's lock: a hash, since MySQL's lock names
// are at most 64 characters.
func quotaLockKey(namespace string) string { return hashedLockKey("agentry_fs:", namespace, 16) }

// hashedLockKey is prefix and the first n bytes of name's SHA-256 in hex:
// lockedTx's keys, short enough for MySQL's 64-character lock names.
func hashedLockKey(prefix, name string, n int) string {
	h := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(h[:n])
}

func (s *Store) putWithinQuota(ctx context.Context, tx *sql.Tx, f *db.File, q db.FileQuota) error {
	var oldSize, oldVersion looseNull
	err := tx.QueryRowContext(ctx, s.d.Bind("SELECT size_bytes, version FROM "+s.fs+" WHERE namespace = ? AND path = ?"), f.Namespace, f.Path).
		Scan(&oldSize, &oldVersion)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	exists := err == nil
	if q.IfVersion != nil && oldVersion.Int64 != *q.IfVersion {
		return fmt.Errorf("%w: %s/%s is at version %d, not %d", db.ErrVersionConflict, f.Namespace, f.Path, oldVersion.Int64, *q.IfVersion)
	}
	var used, files int64
	if err := tx.QueryRowContext(ctx, s.d.Bind("SELECT COALESCE(SUM(size_bytes), 0), COUNT(*) FROM "+s.fs+" WHERE namespace = ?"), f.Namespace).Scan(&used, &files); err != nil {
		return err
	}
	if !exists && q.MaxFiles > 0 && files >= int64(q.MaxFiles) {
		return fmt.Errorf("%w: %s holds %d files, the limit is %d files", db.ErrNamespaceFull, f.Namespace, files, q.MaxFiles)
	}
	if after := used - oldSize.Int64 + f.SizeBytes; after > q.MaxBytes {
		return fmt.Errorf("%w: %s would hold %d bytes, the quota is %d", db.ErrNamespaceFull, f.Namespace, after, q.MaxBytes)
	}
	if exists {
		_, err = tx.ExecContext(ctx, s.d.Bind("UPDATE "+s.fs+` SET content = ?, size_bytes = ?, version = version + 1, updated_at = ?
			WHERE namespace = ? AND path = ?`), f.Content, f.SizeBytes, f.UpdatedAt, f.Namespace, f.Path)
		return err
	}
	_, err = tx.ExecContext(ctx, s.d.Bind("INSERT INTO "+s.fs+" ("+fileCols+") VALUES ("+placeholders(7)+")"),
		f.Namespace, f.Path, f.Content, f.SizeBytes, int64(1), f.CreatedAt, f.UpdatedAt)
	return err
}

func (s *Store) getFileTx(ctx context.Context, tx *sql.Tx, namespace, path string) (*db.File, error) {
	var f db.File
	var updated looseNull
	err := tx.QueryRowContext(ctx, s.d.Bind("SELECT "+fileCols+" FROM "+s.fs+" WHERE namespace = ? AND path = ?"), namespace, path).
		Scan(&f.Namespace, &f.Path, &f.Content, &f.SizeBytes, &f.Version, intCol{&f.CreatedAt}, &updated)
	if err != nil {
		return nil, s.fail("get file "+namespace+"/"+path, err)
	}
	if f.Content == nil {
		f.Content = []byte{}
	}
	f.UpdatedAt = updated.Int64
	return &f, nil
}

// lockedTx runs fn in a write transaction that holds the named lock key:
// SQLite's writer transaction (BEGIN IMMEDIATE holds the database's write
// lock across processes), Postgres's advisory transaction lock, MySQL's
// named lock (held on the connection until after the commit). A check and
// a write under one key cannot interleave with another process's. fn runs
// with the context the transaction uses; the transaction commits when fn
// returns nil. Errors are returned as they are, for the caller to wrap.
func (s *Store) lockedTx(ctx context.Context, key string, fn func(ctx context.Context, tx *sql.Tx) error) error {
	ctx = s.gated(ctx)
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if s.d.LockSchema != nil && !s.d.DDLInTx {
		release, err := s.d.LockSchema(ctx, conn, key)
		if err != nil {
			return err
		}
		// Deferred before the transaction's rollback: runs after it.
		defer release()
	}
	tx, err := conn.BeginTx(ctx, s.d.TxOptions)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.d.LockSchema != nil && s.d.DDLInTx {
		if _, err := s.d.LockSchema(ctx, tx, key); err != nil {
			return err
		}
	}
	if err := fn(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}
