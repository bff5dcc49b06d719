// Package sqlite is the embedded SQLite driver (modernc.org/sqlite, pure Go):
// WAL, foreign keys on, one writer connection whose transactions begin
// IMMEDIATE plus a pool of readers. Tables follow Agno 3.0; Dialect is its SQL
// for the shared store (internal/sqlstore) and migrate, schema/ its DDL.
package sqlite
