// Package postgres is the PostgreSQL driver (pgx/v5 through database/sql):
// Agno 3.0 tables in schema "ai" by default, JSONB columns, run_index assigned
// under a per-session advisory transaction lock. Dialect is its SQL for the
// shared store (internal/sqlstore) and migrate; schema/ holds its DDL.
package postgres
