// Package sqltools owns the sql toolkit (Agno's SQLTools: list_tables,
// describe_table, run_sql_query) for SQLite, Postgres and MySQL/MariaDB:
// read-only by default through the engine's read-only transaction or
// connection, writes only to the tables named in AllowWrite.
//
// The read-only transaction is the engine's guarantee; in front of it a
// statement gate refuses what a read-only transaction does not stop (DDL,
// which MySQL commits implicitly; COPY ... TO PROGRAM; SELECT ... INTO
// OUTFILE; SET; several statements at once). A query runs on a server
// connection of its own, closed after the call, so what it leaves in the
// session (a lock, a setting) ends with the call. The server bounds each
// query by what is left of Config.Timeout (Postgres statement_timeout and
// lock_timeout, MariaDB max_statement_time, MySQL max_execution_time for a
// SELECT and its lock wait timeouts for a write), so a query waiting for a
// lock ends with the call even though the client only hangs up; SQLite's is
// interrupted. A query the server stops fails with tool.ErrTimeout.
//
// None of this replaces a database user with only the privileges the agent
// needs: connect as one, with SELECT on what the agent may read (and
// INSERT/UPDATE/DELETE on the AllowWrite tables). A read-only transaction
// does not stop what a privileged role can do through functions: a Postgres
// superuser (or a member of pg_read_server_files, pg_signal_backend) reads
// server files (pg_read_file, pg_ls_dir) and ends other sessions
// (pg_terminate_backend); a role that may use dblink or postgres_fdw writes
// through another connection; a MySQL user with PROCESS sees every session's
// queries. On its first call the toolkit reads the user's privileges
// (Toolkit.Privileges; on MariaDB those of its default role too) and logs a
// warning once when they reach past the read-only transaction (the user as
// the server names it, never the DSN); with Config.RefusePrivileged every
// call then fails with ErrPrivileged. A read that fails is logged and stands
// for 30 s; with RefusePrivileged those calls fail with ErrPrivileged too
// (ADRs sql-toolkit-privileged-user, sql-toolkit-unread-privileges-and-roles).
package sqltools
