// Package mysql is the MySQL/MariaDB driver (go-sql-driver/mysql, MariaDB 10.11):
// Agno 3.0 tables with VARCHAR keys and JSON columns, run_index assigned with
// the session row locked FOR UPDATE. Dialect is its SQL for the shared store
// (internal/sqlstore) and migrate; schema/ holds its DDL.
package mysql
