// Package sqltools owns the sql toolkit (Agno's SQLTools: list_tables,
// describe_table, run_sql_query) for SQLite, Postgres and MySQL/MariaDB:
// read-only by default through the engine's read-only transaction or
// connection, writes only to the tables named in AllowWrite.
//
// The read-only transaction is the engine's guarantee; in front of it a
// statement gate refuses what a read-only transaction does not stop (DDL,
// which MySQL commits implicitly; COPY ... TO PROGRAM; SELECT ... INTO
// OUTFILE; several statements at once). A query runs on a server connection
// of its own, closed after the call, so what it leaves in the session (a
// lock, a setting) ends with the call. None of this replaces a database user
// with only the privileges the agent needs: connect as one.
package sqltools
