// Package sqlite is the embedded SQLite driver (modernc.org/sqlite, pure Go):
// WAL, foreign keys on, one writer connection whose transactions begin
// IMMEDIATE plus a pool of readers. The writer's WAL file goes through a VFS
// of this package over SQLite's unix VFS that writes a transaction's frames
// with one call (walvfs_unix.go); the same VFS reads the WAL index header's
// change counter for the store's history cache (walindex_unix.go). Tables
// follow Agno 3.0; Dialect is its SQL for the shared store
// (internal/sqlstore) and migrate, schema/ its DDL.
package sqlite
